// The demo is placed in the present: its files' dates move by whole weeks so that the demo
// week's last day is today or the latest day before it on that weekday.
#include "engines/world/demo_world.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "core/time.h"

namespace cortex {
namespace {

TimePoint At(const char* rfc3339) { return *ParseTime(rfc3339); }

// The UTC dates ("YYYY-MM-DD") of every occurred_at in `jsonl`.
std::set<std::string> Days(std::string_view jsonl) {
  std::set<std::string> days;
  size_t start = 0;
  while (start < jsonl.size()) {
    size_t end = jsonl.find('\n', start);
    if (end == std::string_view::npos) end = jsonl.size();
    std::string_view line = jsonl.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    if (j.contains("occurred_at")) days.insert(j["occurred_at"].get<std::string>().substr(0, 10));
  }
  return days;
}

TEST(DemoWorldTest, TheWeekEndsOnTheLatestSameWeekdayOnOrBeforeToday) {
  // The files' week is Mon 23 - Fri 27 Nov 2026.
  ASSERT_EQ(*Days(DemoWeekJsonl()).rbegin(), "2026-11-27");
  EXPECT_EQ(DemoShiftDays(At("2026-11-27T00:00:00Z")), 0);  // its own last day
  EXPECT_EQ(DemoShiftDays(At("2026-11-27T23:59:59Z")), 0);
  EXPECT_EQ(DemoShiftDays(At("2026-12-03T12:00:00Z")), 0);    // the Thursday after
  EXPECT_EQ(DemoShiftDays(At("2026-12-04T08:00:00Z")), 7);    // the next Friday
  EXPECT_EQ(DemoShiftDays(At("2026-11-26T23:59:59Z")), -7);   // never in the future
  EXPECT_EQ(DemoShiftDays(At("2027-03-12T09:00:00Z")), 105);  // a Friday, 15 weeks on
  EXPECT_EQ(DemoShiftDays(At("2026-01-01T09:00:00Z")), -336);
  for (const char* today : {"2026-12-09T10:00:00Z", "2027-06-01T00:00:00Z", "2031-02-28T23:00:00Z",
                            "2024-02-29T12:00:00Z"}) {
    int shift = DemoShiftDays(At(today));
    EXPECT_EQ(shift % 7, 0) << today;  // a Tuesday stays a Tuesday
    auto week = ShiftDemoJsonl(DemoWeekJsonl(), shift);
    ASSERT_TRUE(week.ok()) << week.status().ToString();
    std::string last = *Days(*week).rbegin();
    std::string day = std::string(today).substr(0, 10);
    EXPECT_LE(last, day) << today;
    auto week_later = ShiftDemoJsonl(DemoWeekJsonl(), shift + 7);
    ASSERT_TRUE(week_later.ok());
    EXPECT_GT(*Days(*week_later).rbegin(), day) << today;  // the closest such week
  }
}

TEST(DemoWorldTest, ShiftingMovesEveryTimeAndNothingElse) {
  auto moved = ShiftDemoJsonl(DemoWeekJsonl(), 14);
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  // Sarah's email during Tuesday's deep work, and the block itself, two weeks on.
  auto find = [&](const std::string& text, const std::string& external_id) {
    size_t at = text.find("\"external_id\":\"" + external_id + "\"");
    EXPECT_NE(at, std::string::npos) << external_id;
    size_t begin = text.rfind('\n', at);
    begin = begin == std::string::npos ? 0 : begin + 1;
    return nlohmann::json::parse(text.substr(begin, text.find('\n', at) - begin));
  };
  nlohmann::json email = find(*moved, "demo-0113"), block = find(*moved, "demo-0112");
  EXPECT_EQ(email["occurred_at"], "2026-12-08T10:15:00Z");
  EXPECT_EQ(block["occurred_at"], "2026-12-08T09:00:00Z");
  EXPECT_EQ(block["ends_at"], "2026-12-08T11:00:00Z");
  nlohmann::json original = find(std::string(DemoWeekJsonl()), "demo-0113");
  original.erase("occurred_at");
  email.erase("occurred_at");
  EXPECT_EQ(email, original);
  // Every line is kept, entities too.
  auto world = ShiftDemoJsonl(DemoWorldJsonl(), -7);
  ASSERT_TRUE(world.ok());
  auto lines = [](std::string_view t) {
    size_t n = 0;
    for (char c : t) n += c == '\n';
    return n;
  };
  EXPECT_EQ(lines(*world), lines(DemoWorldJsonl()));
  EXPECT_EQ(*Days(*world).begin(), "2026-10-26");
  DemoAnchor anchor = DemoFirstEpisode();
  EXPECT_EQ(anchor.external_id, "demo-0001");
  EXPECT_EQ(FormatTime(anchor.occurred_at), "2026-11-02T07:00:00Z");
}

}  // namespace
}  // namespace cortex
