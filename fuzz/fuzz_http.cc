// libFuzzer target: one HTTP request, as raw bytes, through the router — Host and Origin
// checks, authentication, JSON-RPC parsing, both MCP eras, every tool and the ingest
// endpoint — against a store holding the demo workspace. The input is parsed loosely as
// "METHOD TARGET HTTP/1.1\r\n", header lines, a blank line, then the body (Beast's own
// parser is Beast's to fuzz; the server hands the router exactly these parts).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "app.h"
#include "core/crypto.h"
#include "core/json_text.h"
#include "fuzz/fuzz_store.h"
#include "protocol/mcp_server.h"
#include "store/sessions.h"
#include "store/tokens.h"
#include "tools/cortex_tools.h"
#include "transport/http_router.h"

namespace cortex::fuzz {
namespace {

// The token the seed corpus uses (fuzz/corpus/http).
constexpr const char* kSecret = "ctk_000000000000000000000000000000000000000000000000";

struct Http {
  ToolRegistry registry;
  EngineConfig config;
  std::unique_ptr<McpServer> mcp;
  Metrics metrics;
  std::unique_ptr<HttpRouter> router;

  Http() {
    FuzzWorld& w = World();
    if (!RegisterCortexTools(registry, config).ok()) std::abort();
    registry.set_check_output(true);  // a result that breaks its own schema is a bug
    TokenRecord t{"tok_fuzz",
                  w.demo.id,
                  Sha256Hex(kSecret),
                  "fuzz",
                  kScopeRead | kScopeAct | kScopeAdmin,
                  w.clock.Now(),
                  std::nullopt};
    if (!w.store->Write([&](WriteTx& tx) { return tx.tokens().Insert(t); }).ok()) std::abort();
    // The clock stands still while fuzzing: lift the call quotas so calls keep reaching
    // the tools (quotas have their own unit tests).
    QuotaLimits unlimited;
    for (const QuotaField& f : kQuotaFields) unlimited.*(f.value) = kMaxQuotaValue;
    mcp = std::make_unique<McpServer>(registry, *w.store, w.clock, ServerInfo{}, unlimited);
    router = std::make_unique<HttpRouter>(*mcp, *w.store, metrics, RouterOptions{}, AuthContext{},
                                          CortexRouterParts(*w.store, w.clock));
  }
};

std::string_view Line(std::string_view& in) {
  size_t end = in.find("\r\n");
  std::string_view line = in.substr(0, end);
  in.remove_prefix(end == std::string_view::npos ? in.size() : end + 2);
  return line;
}

}  // namespace
}  // namespace cortex::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cortex;
  static fuzz::Http* http = new fuzz::Http;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  HttpRequest req;
  std::string_view first = fuzz::Line(in);
  size_t sp = first.find(' ');
  req.method = std::string(first.substr(0, sp));
  if (sp != std::string_view::npos) {
    std::string_view rest = first.substr(sp + 1);
    req.target = std::string(rest.substr(0, rest.find(' ')));
  }
  while (!in.empty()) {
    std::string_view line = fuzz::Line(in);
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    req.headers.emplace_back(AsciiLower(line.substr(0, colon)), std::string(value));
  }
  if (in.size() > HttpRouter::BodyLimit(req.target)) return 0;  // the server refuses these
  req.body = std::string(in);
  RequestLog log;
  HttpResponse res = http->router->Handle(req, log);
  // Whatever came in, what goes out is a real status with a well-formed body.
  if (res.status < 200 || res.status > 599) std::abort();
  if (res.content_type == "application/json" && !IsValidUtf8(res.body)) std::abort();
  // A handler that threw, or a result that broke its own outputSchema.
  if (log.status == "internal_error") std::abort();
  // A stream the transport would now hold open: closed at once, as by a client leaving (a
  // subscriptions/listen counts against its workspace until then).
  if (res.open_stream) http->router->StreamClosed(res.stream);
  // Sessions persist in the store (and the clock stands still, so none expires): end the
  // one this input opened, or a long run would fill the table to limits::kMaxSessions.
  for (const auto& header : res.headers) {
    if (header.first != "Mcp-Session-Id") continue;
    const std::string& ws = fuzz::World().demo.id;
    Status st = fuzz::World().store->Write(
        [&](WriteTx& tx) { return tx.sessions().Delete(ws, header.second).status(); });
    if (!st.ok()) std::abort();
  }
  return 0;
}
