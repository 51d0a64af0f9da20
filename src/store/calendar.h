// The calendar area: what each calendar connector last saw (docs/ingest.md, "Calendars
// change"). Occurrences map an event's UID and recurrence id to the episode that records it
// now; resources hold a CalDAV collection's events as last fetched, by href and ETag.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/tx.h"

namespace cortex {

struct CalendarOccurrenceRow {
  std::string key;          // "<UID>|<recurrence id>" ("" for a single event)
  std::string episode_id;   // the episode standing for it now; "" once cancelled or gone
  std::string fingerprint;  // what the episode says (kind, times, title, counterparty)
  int64_t version = 0;      // how many episodes it has had
  TimePoint starts_at;
  TimePoint ends_at;
};

struct CalendarResourceRow {
  std::string href;
  std::string etag;
  std::string data;  // the iCalendar text
};

class CalendarReader {
 public:
  explicit CalendarReader(TxState& s) : s_(s) {}
  Result<std::vector<CalendarOccurrenceRow>> Occurrences(const std::string& ws,
                                                         const std::string& source);
  Result<std::vector<CalendarResourceRow>> Resources(const std::string& ws,
                                                     const std::string& source);

 protected:
  TxState& s_;
};

class CalendarWriter : public CalendarReader {
 public:
  using CalendarReader::CalendarReader;
  Status PutOccurrence(const std::string& ws, const std::string& source,
                       const CalendarOccurrenceRow& row);
  Status DeleteOccurrence(const std::string& ws, const std::string& source, const std::string& key);
  Status PutResource(const std::string& ws, const std::string& source,
                     const CalendarResourceRow& row);
  Status DeleteResource(const std::string& ws, const std::string& source, const std::string& href);
};

inline CalendarReader ReadTx::calendar() const { return CalendarReader(s_); }
inline CalendarWriter WriteTx::calendar() const { return CalendarWriter(s_); }

}  // namespace cortex
