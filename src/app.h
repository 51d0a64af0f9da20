// Process wiring shared by the `cortex` binary and the conformance fixture server: open the
// store, register tools, and run a transport.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tools/registry.h"

namespace cortex {

struct EngineConfig;
class Clock;
class PathHandler;
struct RouterParts;
class Store;
using RegisterTools = std::function<Status(ToolRegistry&, const EngineConfig&)>;

struct ServeOptions {
  std::string data_dir;     // SQLite data directory or postgresql:// URL (store/store.h)
  std::string config_path;  // TOML; empty: defaults
  std::string listen = "127.0.0.1:8787";      // host:port, [v6]:port
  bool insecure_no_auth = false;              // loopback only; for the conformance suite
  std::string anonymous_workspace = "local";  // whom unauthenticated calls act as
  std::vector<std::string> allowed_origins;
  std::vector<std::string> allowed_hosts;
  int threads = 2;
  std::string base_url;  // --base-url: overrides [http] public_url
};

// `cortex serve`: serves HTTP until SIGTERM. Returns the process exit code.
int RunServe(const ServeOptions& options, const RegisterTools& register_tools);

// `cortex mcp --stdio`: serves stdin/stdout with the token in `token`. Returns the exit code.
int RunStdio(const std::string& data_dir, const std::string& config_path, const std::string& token,
             const RegisterTools& register_tools);

// The HTTP router's parts (transport/http_router.h) as Cortex wires them: bearer tokens
// checked by engines/tokens, POST /v1/episodes ingested by engines/ingest, and `handlers`
// (the OAuth authorization server, the web inbox) in order of precedence.
RouterParts CortexRouterParts(Store& store, const Clock& clock,
                              std::vector<PathHandler*> handlers = {});

// The instructions sent to clients in initialize and server/discover.
extern const char kCortexInstructions[];

}  // namespace cortex
