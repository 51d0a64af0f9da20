// Calendar in: one pass of a calendar account into its workspace (docs/connectors.md,
// docs/ingest.md "Calendars change"). The events that start in the account's window become
// episodes: a focus block (title matching `focus`) a calendar_block, which triage holds
// messages for; any other busy event a meeting. An occurrence is known by its UID and
// recurrence id; when it moves or changes, a new episode records it and the earlier one is
// retracted; when it is cancelled or gone, its episode is retracted. The episodes, the
// retractions and the connector's record of the occurrences commit in one transaction, so
// a pass is exactly once: run again on an unchanged calendar, it adds nothing.
#pragma once

#include <string>

#include "connectors/caldav.h"
#include "connectors/ical.h"
#include "core/clock.h"
#include "core/status.h"
#include "engines/sync/incoming.h"
#include "engines/world/ingest.h"
#include "store/store.h"

namespace cortex {

struct CalendarSyncReport {
  size_t added = 0;      // episodes stored for occurrences new to Cortex
  size_t changed = 0;    // episodes stored for moved or edited occurrences (the old retracted)
  size_t removed = 0;    // occurrences cancelled or gone: their episodes retracted
  size_t unchanged = 0;  // occurrences as already stored
  size_t skipped = 0;    // events not stored: all-day, free, cancelled, unreadable
  size_t fetched = 0;    // CalDAV: event resources fetched (new or changed ETag)
  // "added 12, 1 moved or changed, 2 cancelled, 40 unchanged"
  std::string Summary() const;
};

// Reads `account`'s calendar as it stands now into its workspace (created if missing).
// Errors name the account; a failed pass commits nothing.
Result<CalendarSyncReport> SyncCalendar(Store& store, const Clock& clock,
                                        const CalendarAccount& account);

// The episode for one occurrence (version `version` of it, from `source`).
IncomingEpisode CalendarEpisode(const CalendarOccurrence& o, const std::string& source,
                                int64_t version);

// A calendar account as an incoming source: a pass is SyncCalendar.
class CalendarSource : public IncomingSource {
 public:
  explicit CalendarSource(CalendarAccount account) : account_(std::move(account)) {}

  std::string Name() const override { return "calendar " + account_.Name(); }
  std::string Kind() const override { return "calendar"; }
  const std::string& Workspace() const override { return account_.workspace; }
  std::chrono::seconds PollInterval() const override {
    return std::chrono::seconds(account_.poll_seconds);
  }
  Result<SourcePass> Pass(Store& store, const Clock& clock, const std::atomic<bool>*) override {
    auto report = SyncCalendar(store, clock, account_);
    if (!report.ok()) return report.status();
    return SourcePass{report->Summary(), report->added + report->changed + report->removed > 0};
  }

 private:
  const CalendarAccount account_;
};

}  // namespace cortex
