// The stdio transport (`cortex mcp --stdio`): one JSON-RPC message per line on stdin, one
// per line on stdout. stdout carries nothing but protocol messages; logs go to stderr.
#pragma once

#include <istream>
#include <ostream>

#include "core/metrics.h"
#include "engines/tokens.h"
#include "protocol/mcp_server.h"

namespace cortex {

// Serves messages from `in` until EOF. The stdio process is one client: the session that
// `initialize` opens lasts until EOF. Returns the process exit code (0 on a clean EOF).
int ServeStdio(McpServer& server, const AuthContext& auth, Metrics& metrics, std::istream& in,
               std::ostream& out);

}  // namespace cortex
