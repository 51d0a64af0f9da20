// The demo world (examples/demo-world.jsonl, embedded at build time) that `cortex demo`
// loads: the seeds' Sarah, Marcus, a VIP list, a "deep work" block, weeks of messages.
#pragma once

#include <string_view>

namespace cortex {

std::string_view DemoWorldJsonl();

}  // namespace cortex
