#include "engines/delivery/outgoing_mail.h"

#include "core/json_text.h"
#include "core/limits.h"
#include "core/text.h"
#include "store/episodes.h"

namespace cortex {

namespace {

constexpr size_t kMaxSubjectBytes = 200;  // a longer draft line is cut with "..."
constexpr size_t kMaxSummaryBytes = 240;

std::string Shorten(std::string s, size_t max) {
  if (s.size() <= max) return s;
  return Utf8Prefix(s, max - 3) + "...";
}

}  // namespace

std::string ReplySubject(std::string_view subject) {
  std::string s = HeaderSafe(subject);
  if (s.size() >= 3 && (s[0] == 'R' || s[0] == 'r') && (s[1] == 'E' || s[1] == 'e') &&
      s[2] == ':') {
    return s;
  }
  return "Re: " + s;
}

Result<OutboxItem::Mail> MailOf(ReadTx& tx, const Action& action) {
  OutboxItem::Mail mail;
  mail.subject = HeaderSafe(action.subject);
  if (!action.in_reply_to.empty()) {
    auto ep = tx.episodes().Get(action.workspace_id, action.in_reply_to);
    if (!ep.ok()) return ep.status();
    if (mail.subject.empty() && !HeaderSafe(ep->subject).empty()) {
      mail.subject = ReplySubject(ep->subject);
    }
    mail.thread = ep->thread;
    mail.in_reply_to = MessageIdOf(ep->external_id.value_or(""));
    // The thread's root (when the thread is named by a Message-ID, as mail ingest names
    // it), then the message answered: the References an RFC 5322 reply carries at least.
    std::string root = MessageIdOf(ep->thread);
    if (!root.empty() && root != mail.in_reply_to) mail.references = root;
    if (!mail.in_reply_to.empty()) {
      if (!mail.references.empty()) mail.references += ' ';
      mail.references += mail.in_reply_to;
    }
    if (mail.thread.empty()) mail.thread = mail.in_reply_to;
  }
  if (mail.subject.empty()) {
    std::string_view draft = action.draft;
    mail.subject = HeaderSafe(draft.substr(0, draft.find_first_of("\r\n")));
  }
  mail.subject = Shorten(mail.subject, kMaxSubjectBytes);
  if (mail.thread.empty()) mail.thread = ActionMessageId(action.id);
  return mail;
}

Episode SentEpisodeOf(const Action& action, const OutboxItem::Mail& mail,
                      const std::string& recipient_name, TimePoint at) {
  Episode e;
  e.workspace_id = action.workspace_id;
  e.kind = "message_sent";
  e.occurred_at = at;
  e.entity_id = action.entity_id;
  e.channel = "email";
  e.subject = mail.subject;
  e.summary =
      Shorten("To " + recipient_name + ": '" + FirstSentence(action.draft) + "'", kMaxSummaryBytes);
  e.body = Utf8Prefix(action.draft, limits::kMaxBodyChars);
  e.thread = mail.thread;
  e.external_id = ActionMessageId(action.id);
  return e;
}

}  // namespace cortex
