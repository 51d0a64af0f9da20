// Turning JSON into text safely. Strings that came from headers or paths may hold bytes that
// are not UTF-8; on the wire they become U+FFFD rather than an exception.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace cortex {

// A subtree whose text is already at hand: DumpJson writes `*text` where it meets `*node`
// (the same object, by address) instead of serializing the subtree again. A tool result
// carries its body twice, as structuredContent and as the text of content[0]; with this the
// reply serializes the body once. REQUIRES: *text == DumpJson(*node) (checked in debug
// builds).
struct KnownText {
  const nlohmann::json* node = nullptr;
  const std::string* text = nullptr;
};

// Compact JSON text; invalid UTF-8 in strings is replaced, never thrown.
std::string DumpJson(const nlohmann::json& value, KnownText known = {});

// Parses JSON text; a discarded value (is_discarded()) if it is not valid JSON or nests
// arrays and objects more than limits::kMaxJsonDepth deep. Otherwise accepts and rejects
// exactly what nlohmann::json::parse does, and gives the same value.
nlohmann::json ParseJson(std::string_view text);

// ParseJson for a message from a client, where a key named twice in one object is refused
// rather than read as its last value (RFC 8259 leaves that case to the reader; RFC 7493,
// I-JSON, forbids it): a discarded value, with `*duplicate` (if given) set to where, as
// "params.arguments.to" (array items by index). `*duplicate` is left empty for text that is
// not JSON or nests too deep.
nlohmann::json ParseJsonUniqueKeys(std::string_view text, std::string* duplicate);

// ParseJson for text that must be JSON because Cortex wrote it (a stored column), at any
// depth: anything else is corruption and throws std::runtime_error, as nlohmann's throwing
// parse did.
nlohmann::json ParseStoredJson(std::string_view text);

// The string value of the top-level member `key` of the stored JSON object `text`, if it
// has one, without building a tree of the rest. Throws as ParseStoredJson does.
std::optional<std::string> StoredStringMember(std::string_view text, std::string_view key);

// True iff `s` is well-formed UTF-8.
bool IsValidUtf8(std::string_view s);

// ASCII lowercase.
std::string AsciiLower(std::string_view s);

// `s` safe as HTML or XML text or attribute value: & < > " ' escaped.
std::string MarkupEscape(std::string_view s);

// The longest prefix of `s` of at most `max_bytes` bytes that does not split a UTF-8
// character.
std::string Utf8Prefix(std::string_view s, size_t max_bytes);

}  // namespace cortex
