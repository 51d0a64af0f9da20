#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "core/crypto.h"
#include "core/ids.h"
#include "core/json_schema.h"
#include "core/json_text.h"
#include "core/limits.h"
#include "core/stop_signal.h"
#include "core/text.h"
#include "core/time.h"

namespace cortex {
namespace {

// Random JSON values for comparing our JSON text functions with nlohmann's.
class RandomJson {
 public:
  explicit RandomJson(unsigned seed) : rng_(seed) {}

  nlohmann::json Value(int depth = 0) {
    using nlohmann::json;
    switch (rng_() % (depth > 3 ? 7 : 9)) {
      case 0:
        return nullptr;
      case 1:
        return rng_() % 2 == 0;
      case 2:
        return static_cast<std::int64_t>(rng_()) - (1LL << 31);
      case 3:
        return std::numeric_limits<std::int64_t>::min() + static_cast<std::int64_t>(rng_() % 3);
      case 4:
        return std::numeric_limits<std::uint64_t>::max() - rng_() % 3;
      case 5: {  // either sign, -0.0 included
        double magnitude = rng_() % 16 == 0 ? 0.0 : static_cast<double>(rng_());
        return (rng_() % 2 == 0 ? 1 : -1) *
               std::ldexp(magnitude, static_cast<int>(rng_() % 80) - 40);
      }
      case 6:
        return String();
      case 7: {
        json a = json::array();
        for (unsigned i = rng_() % 4; i > 0; --i) a.push_back(Value(depth + 1));
        return a;
      }
      default: {
        json o = json::object();
        for (unsigned i = rng_() % 4; i > 0; --i) o[String()] = Value(depth + 1);
        return o;
      }
    }
  }

  // Control characters, quote, backslash, DEL, slash, UTF-8 of 2 to 4 bytes, and broken
  // sequences (a lone continuation byte, truncated leads, overlongs, a surrogate, past
  // U+10FFFF), with the edges of the valid ranges.
  std::string String() {
    static const std::vector<std::string> pieces = {"a",        "Z",
                                                    " ",        "\"",
                                                    "\\",       "/",
                                                    "\x7f",     "\xc3\xa9",
                                                    "\x80",     "\xe4\xb8\x96",
                                                    "\xc3",     "\xf0\x9f\x98\x80",
                                                    "\xe4\xb8", "\xc0\xaf",
                                                    "\xff",     "\xed\xa0\x80",
                                                    "-0",       "\xe0\x80\x80",
                                                    "1e5",      "\xf4\x90\x80\x80",
                                                    "\\u00",    "\xf4\x8f\xbf\xbf",
                                                    "{[,:]}",   "\xed\x9f\xbf",
                                                    "true",     "plain text, 42"};
    std::string s;
    for (int n = static_cast<int>(rng_() % 8); n > 0; --n) {
      if (rng_() % 3 == 0) {
        s.push_back(static_cast<char>(rng_() % 0x20));
      } else {
        s += pieces[rng_() % pieces.size()];
      }
    }
    return s;
  }

  // `text` with one random edit: a byte dropped, doubled, or replaced by JSON punctuation.
  std::string Mutate(std::string text) {
    if (text.empty()) return "{";
    size_t at = rng_() % text.size();
    static constexpr char kPunctuation[] = "{}[],:\"\\-.0e ";
    switch (rng_() % 3) {
      case 0:
        text.erase(at, 1);
        break;
      case 1:
        text.insert(at, 1, text[at]);
        break;
      default:
        text[at] = kPunctuation[rng_() % (sizeof kPunctuation - 1)];
    }
    return text;
  }

 private:
  std::mt19937 rng_;
};

// The same value with the same types throughout (nlohmann's == calls 1 and 1u equal).
bool SameTree(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      if (ia.key() != ib.key() || !SameTree(*ia, *ib)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SameTree(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_number_float()) {  // bitwise: -0.0 is not 0.0
    double x = a.get<double>(), y = b.get<double>();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  return a == b;
}

// DumpJson writes JSON text itself: it must give nlohmann's bytes for every value, invalid
// UTF-8 included (replaced by U+FFFD, never thrown).
TEST(JsonTextTest, DumpJsonWritesWhatNlohmannWrites) {
  using nlohmann::json;
  RandomJson random(20261201);
  for (int i = 0; i < 20000; ++i) {
    json v = random.Value();
    std::string expected = v.dump(-1, ' ', false, json::error_handler_t::replace);
    ASSERT_EQ(DumpJson(v), expected) << "value #" << i;
  }
  EXPECT_EQ(DumpJson(json(std::numeric_limits<double>::quiet_NaN())), "null");
  EXPECT_EQ(DumpJson(json{{"text", "line\n\"quoted\"\x01"}}),
            R"({"text":"line\n\"quoted\"\u0001"})");
}

// Strings are scanned eight bytes at a time: every byte value, and a UTF-8 sequence, at
// every offset of a long plain string must come out as nlohmann writes it.
TEST(JsonTextTest, DumpJsonEscapesEveryByteAtEveryOffset) {
  using nlohmann::json;
  for (size_t at = 0; at < 19; ++at) {
    for (int b = 0; b < 256; ++b) {
      std::string s(19, 'a');
      s[at] = static_cast<char>(b);
      ASSERT_EQ(DumpJson(json(s)), json(s).dump(-1, ' ', false, json::error_handler_t::replace))
          << "byte " << b << " at " << at;
    }
    std::string s(19, 'a');
    s.replace(at, 2, "\xc3\xa9");
    ASSERT_EQ(DumpJson(json(s)), json(s).dump()) << "e-acute at " << at;
  }
}

// A subtree whose text is known is written from that text, found by address: the same
// bytes as serializing it, and a copy of the subtree elsewhere in the tree is serialized.
TEST(JsonTextTest, DumpJsonWritesAKnownSubtreeFromItsText) {
  using nlohmann::json;
  RandomJson random(20261130);
  for (int i = 0; i < 2000; ++i) {
    json v = {{"a", random.Value()}, {"b", random.Value()}};
    v["c"] = v["b"];
    std::string text = DumpJson(v["b"]);
    ASSERT_EQ(DumpJson(v, {&v["b"], &text}), DumpJson(v)) << "value #" << i;
  }
  json v = {{"body", {{"x", 1}}}, {"copy", {{"x", 1}}}};
  std::string text = R"({"x":1})";
  EXPECT_EQ(DumpJson(v, {&v["body"], &text}), R"({"body":{"x":1},"copy":{"x":1}})");
#ifdef NDEBUG  // debug builds assert that the text is the subtree's
  std::string other = R"({"spliced":true})";
  EXPECT_EQ(DumpJson(v, {&v["body"], &other}), R"({"body":{"spliced":true},"copy":{"x":1}})");
#endif
}

// ParseJson (simdjson, with nlohmann behind it) accepts exactly what nlohmann accepts and
// builds the same tree, types included: on valid documents, on each with one byte edited,
// and on the cases where the two parsers differ on their own.
TEST(JsonTextTest, MarkupEscapeLeavesNoMarkup) {
  // An app name on the consent page, an href in a CalDAV request body.
  EXPECT_EQ(MarkupEscape("<b onclick='x'>\"Tom & Jerry\"</b>"),
            "&lt;b onclick=&#39;x&#39;&gt;&quot;Tom &amp; Jerry&quot;&lt;/b&gt;");
  EXPECT_EQ(MarkupEscape("/dav/me/work/event 1.ics"), "/dav/me/work/event 1.ics");
}

TEST(JsonTextTest, ParseJsonReadsWhatNlohmannReads) {
  using nlohmann::json;
  RandomJson random(20261202);
  auto check = [](const std::string& text) {
    json ours = ParseJson(text);
    json theirs = json::parse(text, nullptr, false);
    if (theirs.is_discarded()) return ours.is_discarded();
    return SameTree(ours, theirs);
  };
  int accepted_edits = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text = DumpJson(random.Value());
    ASSERT_TRUE(check(text)) << text;
    std::string edited = random.Mutate(text);
    ASSERT_TRUE(check(edited)) << edited;
    accepted_edits += !json::parse(edited, nullptr, false).is_discarded();
  }
  EXPECT_GT(accepted_edits, 1000);  // the edits exercise both outcomes
  for (const std::string& text :
       std::vector<std::string>{"-0",
                                "-0.0",
                                "[-0e0]",
                                "1e400",
                                "18446744073709551616",
                                "-9223372036854775809",
                                "9223372036854775808",
                                "{\"a\":1,\"a\":[2]}",
                                "\"\\ud800\"",
                                "\"\\ud83d\\ude00\"",
                                "\"\\u0000\"",
                                "\"\\u00e9\\u4e16\\/\"",
                                "[-0, 0, \"-0\"]",
                                "{\"a\":-0.0e-0}",
                                "\"\x80\"",
                                "",
                                " ",
                                "[1,]",
                                "01",
                                "1.",
                                "  {\"k\" : [ true ] }  ",
                                "\xef\xbb\xbf{}",
                                [] {  // ~6 KB: simdjson's buffers grow
                                  std::string a = "[";
                                  for (int i = 0; i < 3000; ++i) a += std::to_string(i % 10) + ",";
                                  return a + "-0.5]";
                                }(),
                                std::string(70000, ' ') + "[" + std::string(70000, '1') + "]"}) {
    EXPECT_TRUE(check(text)) << text.substr(0, 80);
  }
  EXPECT_EQ(ParseJson("{\"id\":7}")["id"].type(), json::value_t::number_unsigned);
}

// Arrays and objects nest at most limits::kMaxJsonDepth deep, on both parsers (simdjson for
// short texts, nlohmann past 16 KiB): one level more is not JSON Cortex reads.
TEST(JsonTextTest, ParseJsonRefusesNestingPastTheLimit) {
  // `depth` levels of arrays or objects around 1, or around an empty array (one level more).
  auto nested = [](int depth, bool objects, bool empty_inside = false) {
    std::string open, close;
    for (int i = 0; i < depth; ++i) {
      open += objects ? "{\"a\":" : "[";
      close += objects ? "}" : "]";
    }
    return open + (empty_inside ? "[]" : "1") + close;
  };
  const std::string long_padding(20000, ' ');  // past simdjson's 16 KiB: nlohmann parses
  for (bool objects : {false, true}) {
    for (const std::string& pad : {std::string(), long_padding}) {
      SCOPED_TRACE(std::string(objects ? "objects" : "arrays") + (pad.empty() ? "" : ", long"));
      EXPECT_FALSE(ParseJson(pad + nested(limits::kMaxJsonDepth, objects)).is_discarded());
      EXPECT_TRUE(ParseJson(pad + nested(limits::kMaxJsonDepth + 1, objects)).is_discarded());
      EXPECT_FALSE(
          ParseJson(pad + nested(limits::kMaxJsonDepth - 1, objects, true)).is_discarded());
      EXPECT_TRUE(ParseJson(pad + nested(limits::kMaxJsonDepth, objects, true)).is_discarded());
      EXPECT_TRUE(ParseJson(pad + nested(5000, objects)).is_discarded());
      // What Cortex stored before the limit is still read.
      EXPECT_FALSE(ParseStoredJson(pad + nested(5000, objects)).is_discarded());
    }
  }
}

// A background thread sleeping until its next round wakes as soon as its owner stops it,
// not at the end of the round: a server's shutdown waits for no poll interval.
TEST(StopSignalTest, AWaiterWakesAtStopNotAtItsDeadline) {
  StopSignal stop;
  EXPECT_FALSE(stop.WaitFor(std::chrono::milliseconds(1)));  // not stopped: the wait ends
  bool woke_stopped = false;
  std::thread waiter([&] { woke_stopped = stop.WaitFor(std::chrono::hours(1)); });
  stop.Stop();
  waiter.join();  // an hour, were it not woken
  EXPECT_TRUE(woke_stopped);
  EXPECT_TRUE(stop.stopped());
  EXPECT_TRUE(stop.flag().load());
  // Once stopped, every later wait returns at once.
  EXPECT_TRUE(stop.WaitUntil(std::chrono::steady_clock::now() + std::chrono::hours(1)));
}

TEST(TimeTest, RoundTripsUtc) {
  auto t = ParseTime("2026-05-12T13:24:00Z");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(FormatTime(*t), "2026-05-12T13:24:00Z");
  EXPECT_EQ(ToUnixMillis(*t), 1778592240000);
}

// FormatTime computes the civil date itself; gmtime_r and printf are the reference, across
// 280 years either side of 1970 (leap days, 2000 and 2100, before the epoch).
TEST(TimeTest, FormatsAsGmtimeWould) {
  std::mt19937_64 rng(7);
  const int64_t span = 280LL * 365 * 86400 * 1000;  // TimePoint counts ns: ±292 years
  for (int i = 0; i < 200000; ++i) {
    int64_t ms = static_cast<int64_t>(rng() % (2 * span)) - span;
    if (i % 3 == 0) ms -= ms % 1000;      // whole seconds: no fraction written
    if (i % 7 == 0) ms -= ms % 86400000;  // midnight
    int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
    int millis = static_cast<int>(ms - secs * 1000);
    std::time_t tt = static_cast<std::time_t>(secs);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char want[64];
    std::snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    std::string expected = want;
    if (millis != 0) {
      std::snprintf(want, sizeof want, ".%03d", millis);
      expected += want;
    }
    ASSERT_EQ(FormatTime(FromUnixMillis(ms)), expected + "Z") << ms;
  }
}

TEST(TimeTest, ConvertsOffsetsToUtcAndKeepsMillis) {
  auto t = ParseTime("2026-05-12T15:24:00.250+02:00");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(FormatTime(*t), "2026-05-12T13:24:00.250Z");
}

TEST(TimeTest, RefusesWhatIsNotRfc3339) {
  for (const char* bad : {"", "2026-05-12", "2026-05-12 13:24:00Z", "2026-02-30T00:00:00Z",
                          "2026-05-12T24:00:00Z", "2026-05-12T13:24:00", "2026-05-12T13:24:00Zx",
                          "2026-05-12T13:24:00+2:00", "9999-01-01T00:00:00Z"}) {
    auto t = ParseTime(bad);
    EXPECT_FALSE(t.ok()) << bad;
    if (!t.ok()) {
      EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
    }
  }
}

TEST(IdsTest, PrefixedSortableAndUnique) {
  FixedClock clock(*ParseTime("2026-06-10T14:32:00Z"));
  std::set<std::string> seen;
  std::string prev;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewId("dec_", clock);
    EXPECT_TRUE(IsId(id, "dec_")) << id;
    EXPECT_GT(id, prev);  // strictly increasing even within one millisecond
    prev = id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_FALSE(IsId("dec_01HXP9COMM", "dec_"));
  EXPECT_FALSE(IsId(NewId("ep_", clock), "dec_"));
}

TEST(IdsTest, LaterClockSortsLater) {
  FixedClock clock(*ParseTime("2026-06-10T14:32:00Z"));
  std::string a = NewId("ep_", clock);
  clock.Advance(std::chrono::milliseconds(1));
  std::string b = NewId("ep_", clock);
  EXPECT_LT(a, b);
}

// Another instance whose clock runs ahead minted the current version: the next one must
// still sort after it.
TEST(IdsTest, NewIdAfterStaysAboveAVersionFromAFasterClock) {
  FixedClock clock(*ParseTime("2026-06-10T14:32:00Z"));
  // Ids never go back within a process, and tests run earlier (or an earlier --gtest_repeat
  // round) may have minted ids on later clocks: "ahead" is ahead of the newest id this
  // process would mint now, not only of `clock`.
  std::string newest = NewId("wv_", clock);
  TimePoint later = clock.Now() + std::chrono::minutes(1);
  for (auto step = std::chrono::minutes(1); IdFloor("wv_", later) <= newest; step *= 2) {
    later += step;
  }
  std::string ahead = IdFloor("wv_", later);
  std::string next = NewIdAfter("wv_", clock, ahead);
  EXPECT_GT(next, ahead);
  EXPECT_TRUE(IsId(next, "wv_"));
  EXPECT_EQ(next.substr(0, next.size() - 1), ahead.substr(0, ahead.size() - 1));
  // A carry through trailing 'Z's.
  std::string zs = ahead.substr(0, ahead.size() - 2) + "ZZ";
  std::string after_zs = NewIdAfter("wv_", clock, zs);
  EXPECT_GT(after_zs, zs);
  EXPECT_TRUE(IsId(after_zs, "wv_"));
  // An older previous version: a fresh id from the clock.
  std::string old = IdFloor("wv_", *ParseTime("2026-06-10T14:00:00Z"));
  std::string fresh = NewIdAfter("wv_", clock, old);
  EXPECT_GT(fresh, IdFloor("wv_", clock.Now()));
}

TEST(CryptoTest, Sha256KnownAnswer) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string out;
  ASSERT_TRUE(Base64Decode("SGVsbG8sIOS4lueVjA==", &out));
  EXPECT_EQ(out, "Hello, 世界");
  EXPECT_FALSE(Base64Decode("abc", &out));
}

TEST(JsonSchemaTest, NamesTheFailingField) {
  auto schema = JsonSchema::Compile(nlohmann::json::parse(R"({
    "type": "object", "required": ["to"], "additionalProperties": false,
    "properties": {"to": {"type": "string", "maxLength": 5}, "tags": {"type": "array",
      "items": {"type": "string"}}}})"));
  ASSERT_TRUE(schema.ok());
  EXPECT_TRUE(schema->Validate({{"to", "sarah"}}).ok());
  Status missing = schema->Validate(nlohmann::json::object());
  EXPECT_EQ(missing.code(), Code::kInvalidArgument);
  EXPECT_NE(missing.message().find("'to'"), std::string::npos) << missing.message();
  Status wrong_type = schema->Validate({{"to", 42}});
  EXPECT_NE(wrong_type.message().find("'to'"), std::string::npos) << wrong_type.message();
  Status nested = schema->Validate({{"to", "a"}, {"tags", {"x", 1}}});
  EXPECT_NE(nested.message().find("'tags.1'"), std::string::npos) << nested.message();
  Status extra = schema->Validate({{"to", "a"}, {"cc", "b"}});
  EXPECT_EQ(extra.message(), "field 'cc': unknown field (not in the schema)");
}

// `pattern` is a search (anchors are the pattern's own) wherever it sits: on a property, on
// the items of an array, inside a nested object, on the root; it applies to strings only.
TEST(JsonSchemaTest, PatternsAreMatchedWhereverTheyApply) {
  auto schema = JsonSchema::Compile(nlohmann::json::parse(R"({
    "type": "object", "additionalProperties": false,
    "properties": {
      "id": {"type": "string", "pattern": "^dec_[0-7][0-9A-HJKMNP-TV-Z]{25}$"},
      "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
      "who": {"type": "object", "properties": {"name": {"pattern": "b"}}},
      "any": {"anyOf": [{"type": "string", "pattern": "^x"}, {"type": "integer"}]}}})"));
  ASSERT_TRUE(schema.ok());
  // A mismatch says what is expected: an id's form in words, any other pattern as it is.
  const std::string id_form =
      "must be dec_ followed by 26 Crockford base-32 characters (0-9 and A-Z without I, L, O "
      "and U; the first 0-7)";
  EXPECT_TRUE(schema->Validate({{"id", "dec_01M8R3P2ZTDDMF6JRP5QR6SHH4"}}).ok());
  EXPECT_EQ(schema->Validate({{"id", "dec_01M8R3P2ZTDDMF6JRP5QR6SHHU"}}).message(),
            "field 'id': " + id_form);  // U is not in the alphabet
  EXPECT_EQ(schema->Validate({{"id", "xdec_01M8R3P2ZTDDMF6JRP5QR6SHH4"}}).message(),
            "field 'id': " + id_form);
  EXPECT_TRUE(schema->Validate({{"tags", {"a", "bc"}}}).ok());
  EXPECT_EQ(schema->Validate({{"tags", {"a", "B"}}}).message(),
            "field 'tags.1': must match the pattern ^[a-z]+$");
  EXPECT_TRUE(schema->Validate({{"who", {{"name", "abc"}}}}).ok());  // unanchored: a search
  EXPECT_EQ(schema->Validate({{"who", {{"name", "ac"}}}}).message(),
            "field 'who.name': must match the pattern b");
  EXPECT_TRUE(schema->Validate({{"who", {{"name", 7}}}}).ok());  // not a string: no pattern
  EXPECT_TRUE(schema->Validate({{"any", "xy"}}).ok());           // inside anyOf
  EXPECT_FALSE(schema->Validate({{"any", "yx"}}).ok());
  // A wrong type is reported as such, not as a pattern mismatch.
  EXPECT_NE(schema->Validate({{"id", 5}}).message().find("'id'"), std::string::npos);

  auto root = JsonSchema::Compile({{"type", "string"}, {"pattern", "^[0-9]+$"}});
  ASSERT_TRUE(root.ok());
  EXPECT_TRUE(root->Validate("123").ok());
  EXPECT_EQ(root->Validate("12a").message(), "must match the pattern ^[0-9]+$");
}

// An enum's error lists the values allowed; a wrong type names the type expected.
TEST(JsonSchemaTest, ErrorsSayWhatIsExpected) {
  auto schema = JsonSchema::Compile(nlohmann::json::parse(R"({
    "type": "object",
    "properties": {
      "tone": {"type": "string", "enum": ["warm", "neutral", "brief"]},
      "limit": {"type": "integer"},
      "list": {"type": "array", "items": {"enum": [1, 2]}}}})"));
  ASSERT_TRUE(schema.ok());
  EXPECT_EQ(schema->Validate({{"tone", "angry"}}).message(),
            R"(field 'tone': must be one of "warm", "neutral", "brief")");
  EXPECT_EQ(schema->Validate({{"list", {1, 3}}}).message(), "field 'list.1': must be one of 1, 2");
  EXPECT_EQ(schema->Validate({{"limit", "ten"}}).message(), "field 'limit': must be an integer");
  EXPECT_EQ(schema->Validate({{"tone", 7}}).message(),
            R"(field 'tone': must be one of "warm", "neutral", "brief")");
}

// A message from a client names each key once per object: a repeated key is refused, and
// where it is said, on both parsers (simdjson below 16 KiB, nlohmann above); ParseJson
// itself keeps reading the last value, as nlohmann does.
TEST(JsonTextTest, ParseJsonUniqueKeysRefusesARepeatedKey) {
  using nlohmann::json;
  const std::string big(20000, ' ');  // past simdjson's share: nlohmann parses it
  for (const std::string& pad : {std::string(), big}) {
    std::string where = "stale";
    EXPECT_TRUE(ParseJsonUniqueKeys(pad + R"({"a":1,"a":2})", &where).is_discarded());
    EXPECT_EQ(where, "a");
    EXPECT_TRUE(
        ParseJsonUniqueKeys(pad + R"({"p":{"args":{"to":"x","cc":[1,{"k":1,"k":1}]}}})", &where)
            .is_discarded());
    EXPECT_EQ(where, "p.args.cc.1.k");
    EXPECT_TRUE(ParseJsonUniqueKeys(pad + R"([{}, {"x":[[], {"y":0,"z":0,"y":0}]}])", &where)
                    .is_discarded());
    EXPECT_EQ(where, "1.x.1.y");
    EXPECT_TRUE(ParseJsonUniqueKeys(pad + R"({"m":-0,"m":-0})", &where).is_discarded());
    EXPECT_EQ(where, "m");
    // The same key in different objects is no repeat; nor is a key that is some value.
    json ok = ParseJsonUniqueKeys(pad + R"({"a":{"a":1},"b":[{"a":2},{"a":"a"}]})", &where);
    ASSERT_FALSE(ok.is_discarded());
    EXPECT_EQ(where, "");
    EXPECT_EQ(ok["b"][1]["a"], "a");
    // Text that is not JSON is discarded with no key named.
    EXPECT_TRUE(ParseJsonUniqueKeys(pad + R"({"a":1,"a")", &where).is_discarded());
    EXPECT_EQ(where, "");
    EXPECT_EQ(ParseJson(pad + R"({"a":1,"a":[2]})"), json::parse(R"({"a":[2]})"));
  }
}

TEST(ValidUtf8, KeepsWhatIsValidAndReplacesEachBadByte) {
  EXPECT_EQ(ValidUtf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(ValidUtf8("caf\xC3"), "caf\xEF\xBF\xBD");
  EXPECT_EQ(ValidUtf8("a\xFF\xFE"
                      "b"),
            "a\xEF\xBF\xBD\xEF\xBF\xBD"
            "b");
  EXPECT_TRUE(IsValidUtf8(ValidUtf8("\xED\xA0\x80 surrogate")));
}

}  // namespace
}  // namespace cortex
