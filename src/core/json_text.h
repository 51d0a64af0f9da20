// Turning JSON into text safely. Strings that came from headers or paths may hold bytes that
// are not UTF-8; on the wire they become U+FFFD rather than an exception.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace cortex {

// Compact JSON text; invalid UTF-8 in strings is replaced, never thrown.
std::string DumpJson(const nlohmann::json& value);

// Parses JSON text; a discarded value (is_discarded()) if it is not valid JSON. Accepts and
// rejects exactly what nlohmann::json::parse does, and gives the same value.
nlohmann::json ParseJson(std::string_view text);

// ParseJson for text that must be JSON because Cortex wrote it (a stored column): anything
// else is corruption and throws std::runtime_error, as nlohmann's throwing parse did.
nlohmann::json ParseStoredJson(std::string_view text);

// True iff `s` is well-formed UTF-8.
bool IsValidUtf8(std::string_view s);

// ASCII lowercase.
std::string AsciiLower(std::string_view s);

// The longest prefix of `s` of at most `max_bytes` bytes that does not split a UTF-8
// character.
std::string Utf8Prefix(std::string_view s, size_t max_bytes);

}  // namespace cortex
