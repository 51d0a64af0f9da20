// libFuzzer target: an iCalendar document through the calendar connector's parsing (libical:
// recurrence, time zones) into the typed episodes it ingests, and the same bytes as a CalDAV
// multistatus answer (libxml2). Whatever the input, every occurrence lies in the window and
// ends after it starts, and its episode is valid ingest input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "connectors/caldav.h"
#include "connectors/ical.h"
#include "engines/sync/calendar_sync.h"
#include "fuzz/fuzz_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cortex;
  std::string text(reinterpret_cast<const char*>(data), size);
  (void)ParseMultistatus(text);
  CalendarWindow window;
  window.from = FromUnixMillis(1790000000000);  // 2026-09-21
  window.to = FromUnixMillis(1800000000000);    // 2027-01-15
  window.focus = {"focus"};
  window.max_occurrences = 2000;
  auto parsed = ExpandCalendar(text, window);
  if (!parsed.ok()) return 0;
  std::vector<IngestItem> items;
  for (const CalendarOccurrence& o : parsed->occurrences) {
    if (o.start < window.from || o.start >= window.to || o.end <= o.start) std::abort();
    items.push_back(CalendarEpisode(o, "calendar:fuzz", 1));
  }
  if (items.empty()) return 0;
  fuzz::FuzzWorld& w = fuzz::World();
  auto report = IngestItems(*w.store, w.clock, w.demo.id, std::move(items), nullptr);
  if (!report.ok()) {  // the connector made an episode ingest refuses
    std::fprintf(stderr, "ingest refused: %s\n", report.status().message().c_str());
    std::abort();
  }
  return 0;
}
