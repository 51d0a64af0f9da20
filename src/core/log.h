// Logging: spdlog to stderr, one line per event; never tokens or message bodies.
#pragma once

#include <string>

namespace cortex {

// Sends all logs to stderr (stdout is the protocol channel for `cortex mcp --stdio`).
// `level` is one of trace, debug, info, warn, error, off.
void InitLogging(const std::string& level);

}  // namespace cortex
