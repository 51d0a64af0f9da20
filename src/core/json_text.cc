#include "core/json_text.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/limits.h"

namespace cortex {
namespace {

using nlohmann::json;

std::string NlohmannDump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// How a byte is written inside a JSON string: as it is, escaped, or (a byte >= 0x80) as part
// of a UTF-8 sequence that must be well formed.
enum ByteClass : unsigned char { kPlain, kEscape, kUtf8 };

constexpr std::array<ByteClass, 256> kByteClass = [] {
  std::array<ByteClass, 256> t{};
  for (int c = 0; c < 256; ++c) {
    t[c] = c < 0x20 || c == '"' || c == '\\' ? kEscape : c >= 0x80 ? kUtf8 : kPlain;
  }
  return t;
}();

// The length of the well-formed UTF-8 sequence at `p` (Unicode table 3-7: no overlong
// forms, surrogates or code points past U+10FFFF), or 0.
size_t Utf8SequenceLength(const unsigned char* p, const unsigned char* end) {
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return p + i < end && p[i] >= lo && p[i] <= hi;
  };
  unsigned char c = p[0];
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c >= 0xE1 && c <= 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

// Writes JSON text into a string, bytes at a time through a pointer. std::string's
// push_back and append are not inlined (libstdc++ instantiates them once, out of line), and
// JSON text is written a byte or a few at a time. Finish() trims the room left over.
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out), at_(out.size()) {}

  // At least `n` writable bytes at the returned pointer; Advance() to what was written.
  char* Room(size_t n) {
    if (out_.size() - at_ < n) Grow(n);
    return out_.data() + at_;
  }
  void Advance(char* written_to) { at_ = static_cast<size_t>(written_to - out_.data()); }
  void Put(char c) {
    *Room(1) = c;
    ++at_;
  }
  void Put(const void* bytes, size_t n) {
    std::memcpy(Room(n), bytes, n);
    at_ += n;
  }
  void Put(std::string_view text) { Put(text.data(), text.size()); }
  size_t size() const { return at_; }
  void Truncate(size_t n) { at_ = n; }  // REQUIRES: n <= size()
  void Finish() { out_.resize(at_); }

 private:
  [[gnu::noinline]] void Grow(size_t n) {
    out_.resize(std::max({2 * out_.size(), at_ + n, size_t{256}}));
  }

  std::string& out_;
  size_t at_;  // bytes of out_ written; the rest is room
};

// The first byte at or after `p` that is not copied as it is inside a JSON string (a byte
// below 0x20, '"', '\\', or one of a UTF-8 sequence), or `end`. Eight bytes at a time: the
// reply's text is its body as one long string.
const unsigned char* SkipPlain(const unsigned char* p, const unsigned char* end) {
  constexpr uint64_t kOnes = 0x0101010101010101, kHigh = 0x8080808080808080;
  auto has_zero_byte = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  while (end - p >= 8) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    uint64_t special = ((x - kOnes * 0x20) & ~x & kHigh)    // a byte below 0x20
                       | has_zero_byte(x ^ (kOnes * '"'))   // a quote
                       | has_zero_byte(x ^ (kOnes * '\\'))  // a backslash
                       | (x & kHigh);                       // a byte of a UTF-8 sequence
    if (special != 0) break;
    p += 8;
  }
  while (p < end && kByteClass[*p] == kPlain) ++p;
  return p;
}

// A JSON string literal, escaped as nlohmann's serializer escapes it, checking UTF-8 in the
// same pass and copying runs of plain bytes whole. A string that is not well-formed UTF-8
// goes to nlohmann, whose replacement of bad sequences (U+FFFD) is the one on the wire.
void AppendString(JsonWriter& out, const std::string& s) {
  const size_t start = out.size();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  const auto* run = p;  // start of the bytes not yet copied
  out.Put('"');
  while ((p = SkipPlain(p, end)) < end) {
    unsigned char c = *p;
    if (kByteClass[c] == kUtf8) {
      size_t n = Utf8SequenceLength(p, end);
      if (n == 0) {
        out.Truncate(start);
        out.Put(NlohmannDump(json(s)));
        return;
      }
      p += n;
      continue;
    }
    out.Put(run, static_cast<size_t>(p - run));
    run = ++p;
    char* w = out.Room(6);
    *w++ = '\\';
    switch (c) {
      case '"':
      case '\\':
        *w++ = static_cast<char>(c);
        break;
      case '\b':
        *w++ = 'b';
        break;
      case '\f':
        *w++ = 'f';
        break;
      case '\n':
        *w++ = 'n';
        break;
      case '\r':
        *w++ = 'r';
        break;
      case '\t':
        *w++ = 't';
        break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        *w++ = 'u';
        *w++ = '0';
        *w++ = '0';
        *w++ = kHex[c >> 4];
        *w++ = kHex[c & 0xF];
      }
    }
    out.Advance(w);
  }
  out.Put(run, static_cast<size_t>(end - run));
  out.Put('"');
}

template <typename Int>
void AppendInt(JsonWriter& out, Int v) {
  char* w = out.Room(24);
  out.Advance(std::to_chars(w, w + 24, v).ptr);
}

void Append(JsonWriter& out, const json& v, const KnownText& known) {
  if (&v == known.node) {
    assert(*known.text == DumpJson(v));
    out.Put(*known.text);
    return;
  }
  switch (v.type()) {
    case json::value_t::object: {
      out.Put('{');
      bool first = true;
      for (const auto& [key, item] : v.get_ref<const json::object_t&>()) {
        if (!first) out.Put(',');
        first = false;
        AppendString(out, key);
        out.Put(':');
        Append(out, item, known);
      }
      out.Put('}');
      return;
    }
    case json::value_t::array: {
      out.Put('[');
      bool first = true;
      for (const json& item : v.get_ref<const json::array_t&>()) {
        if (!first) out.Put(',');
        first = false;
        Append(out, item, known);
      }
      out.Put(']');
      return;
    }
    case json::value_t::string:
      return AppendString(out, v.get_ref<const std::string&>());
    case json::value_t::boolean:
      out.Put(v.get<bool>() ? "true" : "false");
      return;
    case json::value_t::null:
      out.Put("null");
      return;
    case json::value_t::number_integer:
      return AppendInt(out, v.get<std::int64_t>());
    case json::value_t::number_unsigned:
      return AppendInt(out, v.get<std::uint64_t>());
    case json::value_t::number_float:  // shortest round-trip form, NaN as null: nlohmann's
    case json::value_t::binary:
    case json::value_t::discarded:
      out.Put(NlohmannDump(v));
      return;
  }
}

// Documents up to this size are parsed by simdjson (larger ones by nlohmann). Its parser
// keeps buffers sized to the largest document it has parsed, ~16 bytes per input byte, and
// there is one per thread that parses (the I/O threads and the write pool): this bounds
// them to ~256 KiB each.
constexpr size_t kSimdjsonMaxBytes = 16 * 1024;

// True if `text` may hold the number -0 (a "-0" after a separator and not followed by a
// digit, '.' or an exponent): nlohmann makes it a signed integer 0, where "0" is unsigned,
// and simdjson gives both as the same INT64. A "-0" inside a string may match too; that
// only costs a second parse.
bool MayHoldMinusZero(std::string_view text) {
  for (size_t at = text.find("-0"); at != std::string_view::npos; at = text.find("-0", at + 1)) {
    char before = at == 0 ? ' ' : text[at - 1];
    char after = at + 2 < text.size() ? text[at + 2] : ' ';
    bool separated = before == '[' || before == ',' || before == ':' || before == ' ' ||
                     before == '\t' || before == '\n' || before == '\r';
    bool ends = !(after >= '0' && after <= '9') && after != '.' && after != 'e' && after != 'E';
    if (separated && ends) return true;
  }
  return false;
}

// How building from simdjson's tree went.
enum class Built {
  kOk,
  kFallback,   // a -0 that nlohmann reads differently: parse with nlohmann instead
  kDuplicate,  // a key named twice in one object, when refused (`path` says where)
};

// Where a duplicate key is, built as FromSimdjson unwinds: "a.b.2.c".
void Prepend(std::string* path, std::string_view part) {
  if (path == nullptr) return;
  *path = path->empty() ? std::string(part) : std::string(part) + "." + *path;
}

// simdjson's value as nlohmann's parser would have built it: integers >= 0 unsigned, as
// nlohmann makes them; kFallback for an integer 0 when the text may hold a -0
// (`minus_zero`). Floats keep their sign in both, -0.0 included. A repeated key keeps its
// last value, as in nlohmann, unless `duplicate` is given: then it is kDuplicate.
Built FromSimdjson(simdjson::dom::element e, bool minus_zero, json& out, std::string* duplicate) {
  using Type = simdjson::dom::element_type;
  switch (e.type()) {
    // (The object and array are named: iterating the temporaries that value_unsafe() refers
    // into would dangle.)
    case Type::OBJECT: {
      out = json::object();
      auto& members = out.get_ref<json::object_t&>();
      for (auto field : simdjson::dom::object(e.get_object().value_unsafe())) {
        auto [it, added] = members.emplace(std::string(field.key), nullptr);
        if (!added && duplicate != nullptr) {
          *duplicate = std::string(field.key);
          return Built::kDuplicate;
        }
        Built b = FromSimdjson(field.value, minus_zero, it->second, duplicate);
        if (b == Built::kDuplicate) Prepend(duplicate, field.key);
        if (b != Built::kOk) return b;
      }
      return Built::kOk;
    }
    case Type::ARRAY: {
      out = json::array();
      size_t index = 0;
      for (auto item : simdjson::dom::array(e.get_array().value_unsafe())) {
        out.push_back(nullptr);
        Built b = FromSimdjson(item, minus_zero, out.back(), duplicate);
        if (b == Built::kDuplicate) Prepend(duplicate, std::to_string(index));
        if (b != Built::kOk) return b;
        ++index;
      }
      return Built::kOk;
    }
    case Type::STRING:
      out = std::string(e.get_string().value_unsafe());
      return Built::kOk;
    case Type::INT64: {
      std::int64_t v = e.get_int64().value_unsafe();
      out = v >= 0 ? json(static_cast<std::uint64_t>(v)) : json(v);
      return v == 0 && minus_zero ? Built::kFallback : Built::kOk;
    }
    case Type::UINT64:
      out = e.get_uint64().value_unsafe();
      return Built::kOk;
    case Type::DOUBLE:
      out = e.get_double().value_unsafe();
      return Built::kOk;
    case Type::BOOL:
      out = e.get_bool().value_unsafe();
      return Built::kOk;
    case Type::NULL_VALUE:
      out = nullptr;
      return Built::kOk;
  }
  return Built::kFallback;
}

// The open arrays and objects while nlohmann parses, for finding a repeated key and saying
// where it is.
class KeyTracker {
 public:
  // Called for each parse event; false once a key repeats.
  void On(json::parse_event_t event, const json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        Item();
        frames_.push_back(Frame{event == json::parse_event_t::object_start, {}, {}, 0});
        return;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames_.empty()) frames_.pop_back();
        return;
      case json::parse_event_t::key: {
        if (frames_.empty() || !parsed.is_string()) return;
        Frame& f = frames_.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second && !found_) {
          for (const Frame& open : frames_) {
            if (!path_.empty()) path_ += '.';
            path_ += open.object ? open.key : std::to_string(open.items - 1);
          }
          found_ = true;
        }
        return;
      }
      case json::parse_event_t::value:
        Item();
        return;
    }
  }
  bool found() const { return found_; }
  const std::string& path() const { return path_; }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;  // of an object, so far
    std::string key;             // of an object: the member being read
    size_t items;                // of an array: items begun so far
  };
  // A value begins: an item of the array it is in, if it is in one.
  void Item() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().items;
  }
  std::vector<Frame> frames_;
  std::string path_;
  bool found_ = false;
};

// This thread's simdjson parser, for documents up to kSimdjsonMaxBytes.
simdjson::dom::parser& ThreadParser() {
  thread_local simdjson::dom::parser parser = [] {
    simdjson::dom::parser p(kSimdjsonMaxBytes);
    // simdjson's depth does not count an empty innermost array or object: a document it
    // finds too deep goes to nlohmann below, which counts exactly.
    if (p.allocate(kSimdjsonMaxBytes, limits::kMaxJsonDepth) != simdjson::SUCCESS) {
      throw std::bad_alloc();
    }
    return p;
  }();
  return parser;
}

// ParseJson and ParseJsonUniqueKeys: `duplicate` null keeps the last of repeated keys.
json Parse(std::string_view text, std::string* duplicate) {
  if (text.size() <= kSimdjsonMaxBytes) {
    simdjson::dom::parser& parser = ThreadParser();
    simdjson::dom::element doc;
    json out;
    if (parser.parse(text.data(), text.size(), /*realloc_if_needed=*/true).get(doc) ==
        simdjson::SUCCESS) {
      switch (FromSimdjson(doc, MayHoldMinusZero(text), out, duplicate)) {
        case Built::kOk:
          return out;
        case Built::kDuplicate:
          return json(json::value_t::discarded);
        case Built::kFallback:
          if (duplicate != nullptr) duplicate->clear();
          break;
      }
    }
  }
  // nlohmann's parser is not recursive; the depth is counted as it goes (0 for the
  // outermost array or object).
  bool too_deep = false;
  std::optional<KeyTracker> keys;
  if (duplicate != nullptr) keys.emplace();
  json out = json::parse(
      text,
      [&too_deep, &keys](int depth, json::parse_event_t event, json& parsed) {
        if (depth >= limits::kMaxJsonDepth && (event == json::parse_event_t::object_start ||
                                               event == json::parse_event_t::array_start)) {
          too_deep = true;
        }
        if (keys) keys->On(event, parsed);
        return true;
      },
      /*allow_exceptions=*/false);
  if (too_deep || out.is_discarded()) return json(json::value_t::discarded);
  if (keys && keys->found()) {
    *duplicate = keys->path();
    return json(json::value_t::discarded);
  }
  return out;
}

}  // namespace

// Parsed by simdjson rather than by nlohmann, whose lexer copies every byte into a token
// buffer (docs/performance.md). Anything simdjson refuses (invalid JSON, but also integers
// past 64 bits, which nlohmann takes as doubles) goes to nlohmann, so what is accepted and
// what it means do not change (core_test.cc compares the two).
nlohmann::json ParseJson(std::string_view text) { return Parse(text, nullptr); }

nlohmann::json ParseJsonUniqueKeys(std::string_view text, std::string* duplicate) {
  std::string where;
  json out = Parse(text, &where);
  if (duplicate != nullptr) *duplicate = out.is_discarded() ? where : std::string();
  return out;
}

nlohmann::json ParseStoredJson(std::string_view text) {
  json v = ParseJson(text);
  // What Cortex stored before the depth limit may nest deeper: still readable.
  if (v.is_discarded()) v = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) throw std::runtime_error("stored JSON is not JSON");
  return v;
}

std::optional<std::string> StoredStringMember(std::string_view text, std::string_view key) {
  if (text.size() <= kSimdjsonMaxBytes) {
    simdjson::dom::element doc;
    std::string_view value;
    if (ThreadParser().parse(text.data(), text.size(), /*realloc_if_needed=*/true).get(doc) ==
        simdjson::SUCCESS) {
      if (doc[key].get_string().get(value) == simdjson::SUCCESS) return std::string(value);
      return std::nullopt;
    }
  }
  json v = ParseStoredJson(text);
  auto it = v.is_object() ? v.find(key) : v.end();
  if (it == v.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// The same bytes as nlohmann's serializer (core_test.cc compares them), which escapes
// strings a byte at a time through a UTF-8 decoder; this copies runs of plain bytes whole
// (docs/performance.md).
std::string DumpJson(const nlohmann::json& value, KnownText known) {
  std::string out;
  JsonWriter writer(out);
  Append(writer, value, known);
  writer.Finish();
  return out;
}

bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    if (*p < 0x80) {
      ++p;
      continue;
    }
    size_t n = Utf8SequenceLength(p, end);
    if (n == 0) return false;
    p += n;
  }
  return true;
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string MarkupEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Utf8Prefix(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  size_t end = max_bytes;
  // Back off over continuation bytes (10xxxxxx) to the start of the cut character.
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return std::string(s.substr(0, end));
}

}  // namespace cortex
