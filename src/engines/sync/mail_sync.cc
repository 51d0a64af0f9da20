#include "engines/sync/mail_sync.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "connectors/mime.h"
#include "core/crypto.h"
#include "core/json_text.h"
#include "core/limits.h"
#include "core/text.h"
#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/world/identifiers.h"
#include "engines/world/ingest.h"
#include "store/entities.h"
#include "store/episodes.h"

namespace cortex {

namespace {

constexpr size_t kBatch = 50;             // messages per transaction
constexpr size_t kMaxSubjectBytes = 500;  // ingest's limits (docs/ingest.md)
constexpr size_t kMaxThreadBytes = 200;
constexpr size_t kMaxExternalIdBytes = 200;
constexpr size_t kMaxSummaryBytes = 300;
constexpr size_t kMaxBodyBytes = limits::kMaxBodyChars;

// A Message-ID, or a digest of the message when it has none (or one too long to keep).
std::string ExternalId(const ParsedMail& m, const std::string& raw) {
  if (!m.message_id.empty() && m.message_id.size() <= kMaxExternalIdBytes &&
      IsValidUtf8(m.message_id)) {
    return m.message_id;
  }
  return "sha256:" + Sha256Hex(m.message_id.empty() ? raw : m.message_id);
}

std::string Thread(const ParsedMail& m, const std::string& external_id) {
  std::string t = !m.references.empty()    ? m.references.front()
                  : !m.in_reply_to.empty() ? m.in_reply_to
                                           : external_id;
  if (t.size() > kMaxThreadBytes || !IsValidUtf8(t)) t = "sha256:" + Sha256Hex(t);
  return t;
}

// Cursor text: "<uidvalidity> <last uid>".
struct Cursor {
  uint32_t uidvalidity = 0;
  uint32_t last_uid = 0;
};

std::optional<Cursor> ParseCursor(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  Cursor c;
  if (!(in >> c.uidvalidity >> c.last_uid)) return std::nullopt;
  return c;
}

}  // namespace

std::string MailSyncReport::Summary() const {
  std::string out = "added " + std::to_string(added);
  if (!per_folder.empty()) out += " (" + per_folder + ")";
  if (duplicates > 0) out += ", " + std::to_string(duplicates) + " already stored";
  if (skipped > 0) out += ", " + std::to_string(skipped) + " skipped without an address";
  if (resynced > 0) out += ", " + std::to_string(resynced) + " folder(s) re-read (UIDVALIDITY)";
  return out;
}

std::vector<IngestItem> MailItems(const std::string& raw, const std::string& kind,
                                  std::optional<TimePoint> internal_date, TimePoint now,
                                  const std::function<bool(const std::string&)>& known_address) {
  auto parsed = ParseMail(raw);
  if (!parsed.ok()) return {};
  // Text from the mail as UTF-8, whatever its charset made of it (ingest takes nothing else).
  ParsedMail& m = *parsed;
  m.subject = ValidUtf8(std::move(m.subject));
  m.text = ValidUtf8(std::move(m.text));
  m.from_name = ValidUtf8(std::move(m.from_name));
  for (auto& [to_name, to_address] : m.to) to_name = ValidUtf8(std::move(to_name));
  for (std::string& a : m.attachments) a = ValidUtf8(std::move(a));
  bool sent = kind == "message_sent";
  std::string name, address;
  if (sent) {
    if (m.to.empty()) return {};
    name = m.to.front().first;
    address = m.to.front().second;
  } else {
    name = m.from_name;
    address = m.from_address;
  }
  auto ident = NormalizeIdentifier(address);
  if (!ident.ok() || ident->front() == '@' || ident->front() == '+' || !IsValidUtf8(*ident)) {
    return {};
  }
  std::vector<IngestItem> items;
  if (!name.empty() && !known_address(*ident)) {
    items.push_back(
        IncomingEntity{Utf8Prefix(name, limits::kMaxNameChars), "person", {*ident}, {}});
  }
  std::string who = name.empty() ? *ident : name;
  std::string first = FirstSentence(m.text);
  if (first.empty()) first = m.subject;
  std::string summary = sent ? "To " + who + ": '" + first + "'" : who + ": '" + first + "'";
  std::string body = m.text;
  if (!m.attachments.empty()) {
    std::string names;
    for (const std::string& a : m.attachments) names += (names.empty() ? "" : ", ") + a;
    body += "\n\n[attachments: " + names + "]";
  }
  std::string external_id = ExternalId(m, raw);
  // The server's INTERNALDATE, else the Date header, else now: the first that ingest takes
  // (1970 to 2200; a Date of 2226 is a sender's error, not a reason to refuse the message).
  auto usable = [](const std::optional<TimePoint>& t) { return t && InTimeRange(*t); };
  IncomingEpisode ep;
  Episode& e = ep.episode;
  e.kind = kind;
  e.occurred_at = usable(internal_date) ? *internal_date : usable(m.date) ? *m.date : now;
  e.channel = "email";
  e.subject = Utf8Prefix(m.subject, kMaxSubjectBytes);
  e.summary = Utf8Prefix(summary, kMaxSummaryBytes);
  e.body = Utf8Prefix(body, kMaxBodyBytes);
  e.thread = Thread(m, external_id);
  e.external_id = external_id;
  ep.counterparty = *ident;
  items.push_back(std::move(ep));
  return items;
}

Result<MailSyncReport> SyncMailbox(Store& store, const Clock& clock, const ImapAccount& account,
                                   ImapSession& session, const std::atomic<bool>* stop) {
  auto ws = EnsureWorkspace(store, clock, account.workspace);
  if (!ws.ok()) return ws.status();
  MailSyncReport report;
  std::vector<std::pair<std::string, std::string>> folders;  // name, episode kind
  for (const std::string& f : account.received) folders.emplace_back(f, "message_received");
  for (const std::string& f : account.sent) folders.emplace_back(f, "message_sent");
  for (const auto& [folder, kind] : folders) {
    std::string source = "imap:" + account.Name() + "/" + folder;
    auto status = session.Stat(folder);
    if (!status.ok()) return status.status();
    std::optional<std::string> stored;
    CORTEX_RETURN_IF_ERROR(store.Read([&](ReadTx& tx) -> Status {
      auto c = tx.episodes().Cursor(ws->id, source);
      if (!c.ok()) return c.status();
      stored = std::move(*c);
      return Status::Ok();
    }));
    std::optional<Cursor> cursor = ParseCursor(stored);
    uint32_t after = 0;
    std::optional<TimePoint> since;
    if (cursor && cursor->uidvalidity == status->uidvalidity) {
      after = cursor->last_uid;
    } else {
      if (cursor) {
        ++report.resynced;
        spdlog::info("imap {}: {} has a new UIDVALIDITY ({} -> {}); re-reading {} days",
                     account.Name(), folder, cursor->uidvalidity, status->uidvalidity,
                     account.backfill_days);
      }
      since = clock.Now() - std::chrono::hours(24 * account.backfill_days);
    }
    auto uids = session.NewUids(folder, after, status->uidnext, since);
    if (!uids.ok()) return uids.status();
    // Past the last message read, up to what the folder held when the pass began: older
    // mail outside the backfill window is never read later.
    uint32_t end_uid = std::max(after, status->uidnext > 0 ? status->uidnext - 1 : 0);
    size_t added_here = 0;
    for (size_t i = 0; i < uids->size() || i == 0; i += kBatch) {
      std::vector<uint32_t> batch(uids->begin() + std::min(i, uids->size()),
                                  uids->begin() + std::min(i + kBatch, uids->size()));
      bool last = i + kBatch >= uids->size();
      // Before the bodies, whose fetches check UIDVALIDITY: these flags and dates are theirs.
      auto meta = session.Describe(folder, batch);
      if (!meta.ok()) return meta.status();
      std::vector<uint32_t> unseen;
      for (uint32_t uid : batch) {
        auto m = meta->find(uid);
        if (m != meta->end() && !m->second.seen) unseen.push_back(uid);
      }
      std::vector<std::string> raws;
      for (uint32_t uid : batch) {
        auto raw = session.Fetch(folder, status->uidvalidity, uid);
        if (!raw.ok()) return raw.status();  // a changed UIDVALIDITY: the next pass re-reads
        raws.push_back(std::move(*raw));
      }
      // Senders already known keep their names; new ones get the name their mail gives.
      std::set<std::string> known, named;
      auto is_known = [&](const std::string& address) {
        if (named.count(address) || known.count(address)) return true;
        bool found = false;
        Status st = store.Read([&](ReadTx& tx) -> Status {
          auto e = tx.entities().FindByIdentifier(ws->id, address);
          found = e.ok();
          return e.ok() || e.status().code() == Code::kNotFound ? Status::Ok() : e.status();
        });
        if (found || !st.ok()) known.insert(address);
        if (!found) named.insert(address);
        return found || !st.ok();
      };
      std::vector<IngestItem> items;
      for (size_t k = 0; k < raws.size(); ++k) {
        auto m = meta->find(batch[k]);
        std::vector<IngestItem> of_one =
            MailItems(raws[k], kind, m == meta->end() ? std::nullopt : m->second.internal_date,
                      clock.Now(), is_known);
        if (of_one.empty()) ++report.skipped;
        for (IngestItem& item : of_one) items.push_back(std::move(item));
      }
      uint32_t upto = batch.empty() ? after : batch.back();
      if (last) upto = std::max(upto, end_uid);
      std::string next = std::to_string(status->uidvalidity) + " " + std::to_string(upto);
      auto ingested = IngestItems(store, clock, ws->id, std::move(items), [&](WriteTx& tx) {
        return tx.episodes().SetCursor(ws->id, source, next, clock.Now());
      });
      if (!ingested.ok()) {
        std::string msg =
            "imap " + account.Name() + " " + folder + ": " + ingested.status().message();
        return ingested.status().code() == Code::kUnavailable ? Status::Unavailable(msg)
                                                              : Status::Internal(msg);
      }
      report.added += ingested->episodes_added;
      report.duplicates += ingested->duplicates;
      report.triaged += ingested->triaged;
      added_here += ingested->episodes_added;
      CORTEX_RETURN_IF_ERROR(session.MarkUnread(folder, unseen));
      if (uids->empty()) break;
      if (stop != nullptr && stop->load()) return report;  // the rest on the next pass
    }
    if (!report.per_folder.empty()) report.per_folder += ", ";
    report.per_folder += folder + " " + std::to_string(added_here);
  }
  return report;
}

namespace {
constexpr std::chrono::seconds kIdleRetryFirst{1};
constexpr std::chrono::seconds kIdleRetryMax{300};

std::string IdleFolder(const ImapAccount& account) {
  return !account.received.empty() ? account.received.front()
         : !account.sent.empty()   ? account.sent.front()
                                   : std::string();
}
}  // namespace

MailSource::MailSource(ImapAccount account)
    : account_(std::move(account)),
      folder_(IdleFolder(account_)),
      use_idle_(account_.idle && !folder_.empty()) {}

MailSource::~MailSource() = default;

Result<SourcePass> MailSource::Pass(Store& store, const Clock& clock,
                                    const std::atomic<bool>* stop) {
  ImapSession session(account_);
  auto report = SyncMailbox(store, clock, account_, session, stop);
  if (!report.ok()) return report.status();
  return SourcePass{report->Summary(), report->added > 0};
}

void MailSource::Watch() {
  using Steady = std::chrono::steady_clock;
  if (!use_idle_ || idle_ || Steady::now() < idle_retry_) return;
  auto watcher = std::make_unique<ImapIdle>(account_);
  auto started = watcher->Start(folder_);
  if (!started.ok()) {
    ++idle_failures_;
    auto wait = Backoff(kIdleRetryFirst, idle_failures_ - 1, kIdleRetryMax);
    idle_retry_ = Steady::now() + wait;
    spdlog::warn("{} (IDLE, attempt {}; again in {} s)", started.status().message(), idle_failures_,
                 wait.count());
  } else if (!*started) {
    spdlog::info("imap {}: the server offers no IDLE; reading every {} s", account_.Name(),
                 account_.poll_seconds);
    use_idle_ = false;
  } else {
    spdlog::info("imap {}: watching {} (IDLE)", account_.Name(), folder_);
    idle_ = std::move(watcher);
    idle_failures_ = 0;
  }
}

void MailSource::WaitForNews(std::chrono::steady_clock::time_point until, StopSignal& stop) {
  using Steady = std::chrono::steady_clock;
  if (idle_) {
    auto news = idle_->Wait(until, stop.flag());
    if (news.ok()) return;  // new mail, or time for a pass
    ++idle_failures_;
    auto wait = Backoff(kIdleRetryFirst, idle_failures_ - 1, kIdleRetryMax);
    spdlog::warn("{} (again in {} s)", news.status().message(), wait.count());
    idle_.reset();
    idle_retry_ = Steady::now() + wait;
  }
  if (use_idle_ && !idle_) until = std::min(until, idle_retry_);
  stop.WaitUntil(until);
}

}  // namespace cortex
