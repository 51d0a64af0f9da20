// The demo workspace's files, embedded at build time so `cortex demo` works anywhere:
// the seeds' world (Sarah, Marcus, a VIP list, a "deep work" block, weeks of messages),
// its rules, and the current week that is triaged under them.
#pragma once

#include <string_view>

namespace cortex {

std::string_view DemoWorldJsonl();  // examples/demo-world.jsonl: entities and history
std::string_view DemoRulesYaml();   // examples/rules.yaml
std::string_view DemoWeekJsonl();   // examples/demo-week.jsonl: the current week

}  // namespace cortex
