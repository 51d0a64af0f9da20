// What an outgoing message looks like as mail: its subject, the message it answers and the
// thread it joins (docs/actions.md, "Mail headers"). Pure helpers plus one read.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "core/text.h"
#include "store/model.h"
#include "store/store.h"

namespace cortex {

// "Re: <subject>", unless `subject` already starts with "Re:" (any case).
std::string ReplySubject(std::string_view subject);

// The mail fields of `action`: its subject (or the draft's first line), and for a reply the
// answered episode's Message-ID, References and thread. NotFound if the answered episode is
// gone (it never is: episodes are never deleted).
Result<OutboxItem::Mail> MailOf(ReadTx& tx, const Action& action);

// The message_sent episode that records `action` delivered at `at` (no id or versions yet).
Episode SentEpisodeOf(const Action& action, const OutboxItem::Mail& mail,
                      const std::string& recipient_name, TimePoint at);

}  // namespace cortex
