#include "engines/sync/calendar_sync.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/world/ingest.h"
#include "store/decisions.h"
#include "store/episodes.h"
#include "store/workspaces.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

TimePoint T(const char* s) { return *ParseTime(s); }

std::string Event(const std::string& uid, const std::string& start, const std::string& end,
                  const std::string& summary, const std::string& extra = "") {
  return "BEGIN:VEVENT\r\nUID:" + uid + "\r\nDTSTAMP:20261001T000000Z\r\nDTSTART:" + start +
         "\r\nDTEND:" + end + "\r\nSUMMARY:" + summary + "\r\n" + extra + "END:VEVENT\r\n";
}

// A calendar in an .ics file read through file://, synced into workspace "cal" of a real
// store at a fixed "now" (2026-11-02T12:00Z, a Monday).
class CalendarSyncTest : public ::testing::Test {
 protected:
  CalendarSyncTest() {
    dir_ = std::filesystem::temp_directory_path() /
           ("cortex-cal-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    account_.workspace = "cal";
    account_.url = "file://" + (dir_ / "me.ics").string();
    account_.protocol = "ics";
    account_.self = {"me@example.test"};
  }
  ~CalendarSyncTest() override { std::filesystem::remove_all(dir_); }

  void Write(const std::string& events) {
    std::ofstream(dir_ / "me.ics") << "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n"
                                   << events << "END:VCALENDAR\r\n";
  }
  CalendarSyncReport Sync() {
    auto r = SyncCalendar(*store_, clock_, account_);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : CalendarSyncReport{};
  }
  // The focus block triage sees at `t`: its subject, or "" for none.
  std::string BlockAt(const char* t) {
    std::string subject;
    Status st = store_->Read([&](ReadTx& tx) -> Status {
      auto ws = tx.workspaces().FindByName("cal");
      if (!ws.ok()) return ws.status();
      auto b = tx.episodes().ActiveBlockAt(ws->id, T(t), T(t) - std::chrono::hours(24 * 14));
      if (!b.ok()) return b.status();
      if (*b) subject = (*b)->subject;
      return Status::Ok();
    });
    EXPECT_TRUE(st.ok()) << st.message();
    return subject;
  }
  int64_t EpisodeCount() {
    int64_t n = 0;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) -> Status {
                      auto ws = tx.workspaces().FindByName("cal");
                      if (!ws.ok()) return ws.status();
                      auto c = tx.workspaces().Counts(ws->id);
                      if (!c.ok()) return c.status();
                      n = c->episodes;
                      return Status::Ok();
                    })
                    .ok());
    return n;
  }

  testing::TempStore store_;
  FixedClock clock_{T("2026-11-02T12:00:00Z")};
  std::filesystem::path dir_;
  CalendarAccount account_;
};

TEST_F(CalendarSyncTest, ASecondSyncOfAnUnchangedCalendarAddsNothing) {
  Write(Event("focus", "20261103T090000Z", "20261103T110000Z", "Deep work",
              "RRULE:FREQ=DAILY;COUNT=3\r\n") +
        Event("m", "20261104T150000Z", "20261104T153000Z", "1:1",
              "ATTENDEE;CN=Sarah:mailto:sarah@northwind.example\r\n"));
  CalendarSyncReport first = Sync();
  EXPECT_EQ(first.added, 4u);
  EXPECT_EQ(EpisodeCount(), 4);
  CalendarSyncReport second = Sync();
  EXPECT_EQ(second.added, 0u);
  EXPECT_EQ(second.changed, 0u);
  EXPECT_EQ(second.unchanged, 4u);
  EXPECT_EQ(EpisodeCount(), 4);
  EXPECT_EQ(BlockAt("2026-11-04T10:00:00Z"), "Deep work");
  EXPECT_EQ(BlockAt("2026-11-04T15:10:00Z"), "");  // a meeting is not a focus block
}

// A moved block counts at its new time only; a cancelled one no longer counts; and an
// event moved back where it was counts again (a new episode, not the retracted one).
TEST_F(CalendarSyncTest, MovedAndCancelledEventsStopCountingAsFocusTime) {
  Write(Event("a", "20261103T090000Z", "20261103T110000Z", "Focus A") +
        Event("b", "20261104T090000Z", "20261104T110000Z", "Focus B"));
  EXPECT_EQ(Sync().added, 2u);
  EXPECT_EQ(BlockAt("2026-11-03T10:00:00Z"), "Focus A");
  EXPECT_EQ(BlockAt("2026-11-04T10:00:00Z"), "Focus B");

  Write(Event("a", "20261103T140000Z", "20261103T160000Z", "Focus A"));  // a moved, b gone
  CalendarSyncReport r = Sync();
  EXPECT_EQ(r.changed, 1u);
  EXPECT_EQ(r.removed, 1u);
  EXPECT_EQ(BlockAt("2026-11-03T10:00:00Z"), "");
  EXPECT_EQ(BlockAt("2026-11-03T15:00:00Z"), "Focus A");
  EXPECT_EQ(BlockAt("2026-11-04T10:00:00Z"), "");
  EXPECT_EQ(EpisodeCount(), 3);  // nothing stored was edited or deleted

  Write(Event("a", "20261103T090000Z", "20261103T110000Z", "Focus A") +
        Event("b", "20261104T090000Z", "20261104T110000Z", "Focus B"));
  r = Sync();
  EXPECT_EQ(r.changed, 1u);
  EXPECT_EQ(r.added, 1u);
  EXPECT_EQ(BlockAt("2026-11-03T10:00:00Z"), "Focus A");
  EXPECT_EQ(BlockAt("2026-11-03T15:00:00Z"), "");
  EXPECT_EQ(BlockAt("2026-11-04T10:00:00Z"), "Focus B");
  EXPECT_EQ(Sync().added + Sync().changed, 0u);
}

// What has already happened stays: a past block that leaves the feed is not retracted.
TEST_F(CalendarSyncTest, APastEventLeavingTheFeedStaysAsItWas) {
  Write(Event("past", "20261102T090000Z", "20261102T110000Z", "Focus earlier"));
  EXPECT_EQ(Sync().added, 1u);
  Write("");
  EXPECT_EQ(Sync().removed, 0u);
  EXPECT_EQ(BlockAt("2026-11-02T10:00:00Z"), "Focus earlier");
}

// A message that arrives during a synced focus block is held until the block ends; after
// the block is cancelled, a message at that time surfaces now.
TEST_F(CalendarSyncTest, TriageUsesTheCalendarAsItStandsNow) {
  Write(Event("f", "20261102T110000Z", "20261102T130000Z", "Deep work"));
  Sync();
  auto ws = EnsureWorkspace(*store_, clock_, "cal");
  ASSERT_TRUE(ws.ok());
  auto held = IngestJsonl(
      *store_, clock_, ws->id,
      R"({"type":"episode","kind":"message_received","occurred_at":"2026-11-02T12:00:00Z","counterparty":"bob@x.example","summary":"Bob: 'hi'","external_id":"m1"})");
  ASSERT_TRUE(held.ok()) << held.status().message();
  Write("");
  EXPECT_EQ(Sync().removed, 1u);
  auto now = IngestJsonl(
      *store_, clock_, ws->id,
      R"({"type":"episode","kind":"message_received","occurred_at":"2026-11-02T12:00:00Z","counterparty":"bob@x.example","summary":"Bob: 'again'","external_id":"m2"})");
  ASSERT_TRUE(now.ok()) << now.status().message();
  std::vector<std::string> details;  // newest first
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) -> Status {
                    auto list = tx.decisions().List(ws->id, DecisionFilter{}, 10);
                    if (!list.ok()) return list.status();
                    for (const Decision& d : *list) details.push_back(d.details_json);
                    return Status::Ok();
                  })
                  .ok());
  ASSERT_EQ(details.size(), 2u);
  EXPECT_NE(details[1].find("Calendar block 'Deep work' active"), std::string::npos) << details[1];
  EXPECT_EQ(details[0].find("active_focus_block"), std::string::npos) << details[0];
}

TEST_F(CalendarSyncTest, AnUnreadableFeedNamesTheCalendarAndChangesNothing) {
  Write(Event("a", "20261103T090000Z", "20261103T110000Z", "Focus A"));
  Sync();
  std::ofstream(dir_ / "me.ics") << "not a calendar";
  auto r = SyncCalendar(*store_, clock_, account_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("calendar " + account_.Name()), std::string::npos)
      << r.status().message();
  EXPECT_EQ(BlockAt("2026-11-03T10:00:00Z"), "Focus A");
  std::filesystem::remove(dir_ / "me.ics");
  r = SyncCalendar(*store_, clock_, account_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound) << r.status().message();
}

}  // namespace
}  // namespace cortex
