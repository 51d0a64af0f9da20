// The demo workspace's files, embedded at build time so `cortex demo` works anywhere:
// the seeds' world (Sarah, Marcus, a VIP list, a "deep work" block, weeks of messages),
// its rules, and the current week that is triaged under them.
//
// The files hold fixed dates (four weeks of November 2026). `cortex demo` places them in
// the present: every time moves by the same whole number of weeks (so a Tuesday stays a
// Tuesday, as the rules expect), the most that leaves the demo week's last day on or
// before today (docs/architecture.md, "The demo lives in the present").
#pragma once

#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/status.h"

namespace cortex {

std::string_view DemoWorldJsonl();  // examples/demo-world.jsonl: entities and history
std::string_view DemoRulesYaml();   // examples/rules.yaml
std::string_view DemoWeekJsonl();   // examples/demo-week.jsonl: the current week

// Days to add to the files' times so that the demo week's last day (UTC, the demo
// workspace's zone) is `today`'s day or the latest day before it on the same weekday: a
// multiple of 7, negative for a day before the files' week.
int DemoShiftDays(TimePoint today);

// `jsonl` (the demo's lines) with every episode's occurred_at and ends_at moved by `days`.
// Nothing else changes: external ids stay, so loading it again skips what is stored.
Result<std::string> ShiftDemoJsonl(std::string_view jsonl, int days);

// The first episode of DemoWorldJsonl(): its external id and time in the file. Where the
// demo's stored copy of it lies tells how an earlier `cortex demo` placed the demo.
struct DemoAnchor {
  std::string external_id;
  TimePoint occurred_at;
};
DemoAnchor DemoFirstEpisode();

}  // namespace cortex
