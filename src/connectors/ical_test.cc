#include "connectors/ical.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/time.h"

namespace cortex {
namespace {

TimePoint T(const char* s) { return *ParseTime(s); }

constexpr const char* kBerlin =
    "BEGIN:VTIMEZONE\r\nTZID:Europe/Berlin\r\n"
    "BEGIN:DAYLIGHT\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\nTZNAME:CEST\r\n"
    "DTSTART:19700329T020000\r\nRRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU\r\nEND:DAYLIGHT\r\n"
    "BEGIN:STANDARD\r\nTZOFFSETFROM:+0200\r\nTZOFFSETTO:+0100\r\nTZNAME:CET\r\n"
    "DTSTART:19701025T030000\r\nRRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU\r\nEND:STANDARD\r\n"
    "END:VTIMEZONE\r\n";

std::string Calendar(const std::string& events) {
  // Appended piece by piece: GCC 12 warns, wrongly, on std::string + a literal.
  std::string out = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n";
  out += kBerlin;
  out += events;
  out += "END:VCALENDAR\r\n";
  return out;
}

CalendarWindow Window() {
  CalendarWindow w;
  w.from = T("2026-10-01T00:00:00Z");
  w.to = T("2026-11-30T00:00:00Z");
  w.focus = {"deep work", "focus"};
  w.self = {"me@example.test"};
  return w;
}

// A weekly 09:00 block in Berlin stays at 09:00 local across the end of summer time
// (2026-10-25): 07:00Z before, 08:00Z after. EXDATE drops one instance; a RECURRENCE-ID
// override moves another, and the override is known by the instance it replaces.
TEST(IcalTest, WeeklyBlockKeepsItsLocalTimeAcrossDstWithExdateAndOverride) {
  std::string ics = Calendar(
      "BEGIN:VEVENT\r\nUID:focus-1\r\nDTSTAMP:20261001T000000Z\r\n"
      "DTSTART;TZID=Europe/Berlin:20261012T090000\r\n"
      "DTEND;TZID=Europe/Berlin:20261012T110000\r\n"
      "RRULE:FREQ=WEEKLY;COUNT=6\r\nEXDATE;TZID=Europe/Berlin:20261019T090000\r\n"
      "SUMMARY:Deep Work\r\nEND:VEVENT\r\n"
      "BEGIN:VEVENT\r\nUID:focus-1\r\nDTSTAMP:20261001T000000Z\r\n"
      "RECURRENCE-ID;TZID=Europe/Berlin:20261109T090000\r\n"
      "DTSTART;TZID=Europe/Berlin:20261109T140000\r\n"
      "DTEND;TZID=Europe/Berlin:20261109T160000\r\n"
      "SUMMARY:Deep Work (moved)\r\nEND:VEVENT\r\n");
  auto parsed = ExpandCalendar(ics, Window());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  std::vector<std::string> starts, ends;
  for (const CalendarOccurrence& o : parsed->occurrences) {
    starts.push_back(FormatTime(o.start));
    ends.push_back(FormatTime(o.end));
    EXPECT_TRUE(o.focus);
    EXPECT_EQ(o.uid, "focus-1");
  }
  EXPECT_EQ(starts, (std::vector<std::string>{"2026-10-12T07:00:00Z", "2026-10-26T08:00:00Z",
                                              "2026-11-02T08:00:00Z", "2026-11-09T13:00:00Z",
                                              "2026-11-16T08:00:00Z"}));
  EXPECT_EQ(ends[1], "2026-10-26T10:00:00Z");
  // The moved instance keeps the key of the one it replaces.
  EXPECT_EQ(parsed->occurrences[3].recurrence_id, "2026-11-09T08:00:00Z");
  EXPECT_EQ(parsed->occurrences[3].Key(), "focus-1|2026-11-09T08:00:00Z");
}

TEST(IcalTest, AttendeesMakeAMeetingWithTheOtherPersonAsCounterparty) {
  std::string ics = Calendar(
      "BEGIN:VEVENT\r\nUID:m-1\r\nDTSTAMP:20261001T000000Z\r\n"
      "DTSTART:20261104T150000Z\r\nDURATION:PT30M\r\nSUMMARY:1:1 Sarah / Alex\r\n"
      "ORGANIZER;CN=Me:mailto:ME@example.test\r\n"
      "ATTENDEE;CN=Sarah Chen:mailto:sarah@northwind.example\r\nEND:VEVENT\r\n");
  auto parsed = ExpandCalendar(ics, Window());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_EQ(parsed->occurrences.size(), 1u);
  const CalendarOccurrence& o = parsed->occurrences[0];
  EXPECT_FALSE(o.focus);
  EXPECT_EQ(o.counterparty, "sarah@northwind.example");
  EXPECT_EQ(o.counterparty_name, "Sarah Chen");
  EXPECT_EQ(FormatTime(o.end), "2026-11-04T15:30:00Z");
  EXPECT_EQ(o.Key(), "m-1|");
}

TEST(IcalTest, CancelledFreeAndAllDayEventsAreNotBusyTime) {
  std::string ics = Calendar(
      "BEGIN:VEVENT\r\nUID:c\r\nDTSTAMP:20261001T000000Z\r\nDTSTART:20261104T150000Z\r\n"
      "DTEND:20261104T160000Z\r\nSTATUS:CANCELLED\r\nSUMMARY:x\r\nEND:VEVENT\r\n"
      "BEGIN:VEVENT\r\nUID:f\r\nDTSTAMP:20261001T000000Z\r\nDTSTART:20261104T150000Z\r\n"
      "DTEND:20261104T160000Z\r\nTRANSP:TRANSPARENT\r\nSUMMARY:x\r\nEND:VEVENT\r\n"
      "BEGIN:VEVENT\r\nUID:a\r\nDTSTAMP:20261001T000000Z\r\nDTSTART;VALUE=DATE:20261104\r\n"
      "DTEND;VALUE=DATE:20261105\r\nSUMMARY:holiday\r\nEND:VEVENT\r\n"
      "BEGIN:VEVENT\r\nUID:out\r\nDTSTAMP:20261001T000000Z\r\nDTSTART:20270104T150000Z\r\n"
      "DTEND:20270104T160000Z\r\nSUMMARY:outside the window\r\nEND:VEVENT\r\n");
  auto parsed = ExpandCalendar(ics, Window());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_TRUE(parsed->occurrences.empty());
  EXPECT_EQ(parsed->skipped, 3u);
}

// A meeting the person declined (their own ATTENDEE has PARTSTAT=DECLINED) is free time; one
// they accepted, or that someone else declined, is busy. Declining one instance of a weekly
// meeting (an override with the person's PARTSTAT=DECLINED) frees that instance only.
TEST(IcalTest, WhatThePersonDeclinedIsNotBusyTime) {
  auto event = [](const std::string& uid, const std::string& start, const std::string& me,
                  const std::string& extra = "") {
    return "BEGIN:VEVENT\r\nUID:" + uid + "\r\nDTSTAMP:20261001T000000Z\r\nDTSTART:" + start +
           "\r\nDTEND:" + start.substr(0, 9) + "160000Z\r\n" + extra + "SUMMARY:sync\r\n" +
           "ORGANIZER;CN=Sarah Chen:mailto:sarah@northwind.example\r\n" +
           "ATTENDEE;PARTSTAT=DECLINED:mailto:bo@northwind.example\r\n" +
           "ATTENDEE;PARTSTAT=" + me + ":mailto:Me@Example.test\r\nEND:VEVENT\r\n";
  };
  auto parsed = ExpandCalendar(
      Calendar(event("declined", "20261104T150000Z", "DECLINED") +
               event("accepted", "20261105T150000Z", "ACCEPTED") +
               event("weekly", "20261102T150000Z", "ACCEPTED", "RRULE:FREQ=WEEKLY;COUNT=3\r\n") +
               event("weekly", "20261109T150000Z", "DECLINED",
                     "RECURRENCE-ID:20261109T150000Z\r\n")),
      Window());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  std::vector<std::string> busy;
  for (const CalendarOccurrence& o : parsed->occurrences) busy.push_back(o.Key());
  std::sort(busy.begin(), busy.end());
  EXPECT_EQ(busy, (std::vector<std::string>{"accepted|", "weekly|2026-11-02T15:00:00Z",
                                            "weekly|2026-11-16T15:00:00Z"}));
  EXPECT_EQ(parsed->skipped, 2u);
}

// A time a TimePoint cannot hold (fuzz_ical: DTEND in the year 40522024 wrapped round to
// 1715) is no event rather than a block ending before it starts.
TEST(IcalTest, AnEventEndingOutOfRangeIsSkipped) {
  auto parsed = ExpandCalendar(
      Calendar("BEGIN:VEVENT\r\nUID:y\r\nDTSTAMP:20261001T000000Z\r\nDTSTART:20261012T090000Z\r\n"
               "DTEND:40522024T110000Z\r\nSUMMARY:focus\r\nEND:VEVENT\r\n"),
      Window());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_TRUE(parsed->occurrences.empty());
  EXPECT_EQ(parsed->skipped, 1u);
}

TEST(IcalTest, GarbageIsRefusedAndARunawayRuleIsBounded) {
  EXPECT_FALSE(ExpandCalendar("hello", Window()).ok());
  EXPECT_FALSE(ExpandCalendar("", Window()).ok());
  CalendarWindow w = Window();
  w.max_occurrences = 100;
  auto parsed = ExpandCalendar(
      Calendar("BEGIN:VEVENT\r\nUID:r\r\nDTSTAMP:20261001T000000Z\r\nDTSTART:20261001T000000Z\r\n"
               "DTEND:20261001T000100Z\r\nRRULE:FREQ=MINUTELY\r\nSUMMARY:x\r\nEND:VEVENT\r\n"),
      w);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("more than 100 occurrences"), std::string::npos);
}

}  // namespace
}  // namespace cortex
