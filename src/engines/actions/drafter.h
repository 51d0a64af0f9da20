// The drafter turns a message and a tone hint into the text to send. The built-in drafter
// is deterministic: the same input always gives the same draft.
#pragma once

#include <string>

#include "core/status.h"

namespace cortex {

// Tones the built-in drafter knows; the empty tone leaves the message as written.
inline constexpr const char* kTones[] = {"neutral", "direct", "warm", "formal"};

// Drafts `message` for `recipient_name` in `tone`. InvalidArgument for an unknown tone.
Result<std::string> DraftMessage(const std::string& message, const std::string& tone,
                                 const std::string& recipient_name);

}  // namespace cortex
