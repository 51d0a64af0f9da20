// What an outgoing message looks like as mail: its subject, the message it answers and the
// thread it joins (docs/actions.md, "Mail headers"). Pure helpers plus one read.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "store/model.h"
#include "store/store.h"

namespace cortex {

// `text` as one header-safe line: every control character (CR, LF, NUL, TAB...) becomes a
// space, runs of spaces become one, and the ends are trimmed. Never lets a line break into
// a header.
std::string HeaderSafe(std::string_view text);

// The first sentence of `text` (to . ! or ? and a space, else its first line), one line.
std::string FirstSentence(std::string_view text);

// "Re: <subject>", unless `subject` already starts with "Re:" (any case).
std::string ReplySubject(std::string_view subject);

// A Message-ID as Cortex stores it (external_id, no angle brackets) if `external_id` looks
// like one ("local@domain", no spaces or brackets inside), else "".
std::string MessageIdOf(std::string_view external_id);

// The Message-ID (no brackets) of the message delivering action `action_id`.
std::string ActionMessageId(std::string_view action_id);

// The mail fields of `action`: its subject (or the draft's first line), and for a reply the
// answered episode's Message-ID, References and thread. NotFound if the answered episode is
// gone (it never is: episodes are never deleted).
Result<OutboxItem::Mail> MailOf(ReadTx& tx, const Action& action);

// The message_sent episode that records `action` delivered at `at` (no id or versions yet).
Episode SentEpisodeOf(const Action& action, const OutboxItem::Mail& mail,
                      const std::string& recipient_name, TimePoint at);

}  // namespace cortex
