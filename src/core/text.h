// Text helpers for mail that both floors need: parsing what arrives (connectors) and
// writing what Cortex sends (engines/outgoing_mail).
#pragma once

#include <string>
#include <string_view>

namespace cortex {

// `text` as one header-safe line: every control character (CR, LF, NUL, TAB...) becomes a
// space, runs of spaces become one, and the ends are trimmed. Never lets a line break into
// a header.
std::string HeaderSafe(std::string_view text);

// `text` with every byte that does not begin a well-formed UTF-8 character replaced by
// U+FFFD: what a connector stores of text an outside system sent (a broken charset).
std::string ValidUtf8(std::string text);

// The first sentence of `text` (to . ! or ? and a space, else its first line), one line.
std::string FirstSentence(std::string_view text);

// A Message-ID as Cortex stores it (external_id, no angle brackets) if `external_id` looks
// like one ("local@domain", no spaces or brackets inside), else "".
std::string MessageIdOf(std::string_view external_id);

// The Message-ID (no brackets) of the message delivering action `action_id`.
std::string ActionMessageId(std::string_view action_id);

}  // namespace cortex
