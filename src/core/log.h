// Logging: spdlog to stderr, one line per event; never tokens or message bodies.
#pragma once

#include <spdlog/logger.h>

#include <string>

namespace cortex {

// Sends all logs to stderr (stdout is the protocol channel for `cortex mcp --stdio`).
// `level` is one of trace, debug, info, warn, error, off. On a terminal every line is
// written at once, in colour. Otherwise access-log lines (AccessLog()) are buffered and
// written with the next other line, at 64 KiB, or within a second; every other line
// flushes at once (docs/performance.md).
void InitLogging(const std::string& level);

// The logger for the one line per HTTP request. Before InitLogging: spdlog's default.
spdlog::logger& AccessLog();

}  // namespace cortex
