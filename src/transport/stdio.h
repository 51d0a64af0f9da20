// The stdio transport (`cortex mcp --stdio`): one JSON-RPC message per line on stdin, one
// per line on stdout. stdout carries nothing but protocol messages; logs go to stderr.
#pragma once

#include <functional>
#include <istream>
#include <ostream>

#include "core/metrics.h"
#include "protocol/mcp_server.h"

namespace cortex {

// Who the process acts for. Called before every message, so that a token revoked while
// the process runs stops working at once.
using StdioAuthenticator = std::function<Result<AuthContext>()>;

// Serves messages from `in` until EOF. The stdio process is one client: the session that
// `initialize` opens lasts until EOF. Returns the process exit code: 0 on a clean EOF, 1
// when the token stopped authenticating (the process ends rather than serve it).
int ServeStdio(McpServer& server, const StdioAuthenticator& authenticate, Metrics& metrics,
               std::istream& in, std::ostream& out);

}  // namespace cortex
