#include "transport/http_router.h"

#include <gtest/gtest.h>

#include "app.h"
#include "core/limits.h"
#include "core/time.h"
#include "protocol/jsonrpc.h"
#include "testing/temp_store.h"
#include "tools/cortex_tools.h"
#include "web/oauth_api.h"

namespace cortex {
namespace {

using nlohmann::json;

// A store that stops answering after a given number of further transactions, as a
// database going away under a running server would.
class FlakyStore final : public Store {
 public:
  explicit FlakyStore(Store& real) : real_(real) {}
  void FailAfter(int transactions) { left_ = transactions; }
  void Heal() { left_ = -1; }

  Status Read(const std::function<Status(ReadTx&)>& fn) override {
    return Down() ? Status::Unavailable("store down") : real_.Read(fn);
  }
  Status Write(const std::function<Status(WriteTx&)>& fn, Durability d) override {
    return Down() ? Status::Unavailable("store down") : real_.Write(fn, d);
  }
  Result<int> SchemaVersion() override { return real_.SchemaVersion(); }
  bool MultiInstance() const override { return real_.MultiInstance(); }

 private:
  bool Down() {
    if (left_ < 0) return false;
    if (left_ == 0) return true;
    --left_;
    return false;
  }
  Store& real_;
  int left_ = -1;
};

class HttpRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterCortexTools(registry_, config_).ok());
    mcp_ = std::make_unique<McpServer>(registry_, *store_, clock_, ServerInfo{});
    router_ = std::make_unique<HttpRouter>(*mcp_, *store_, metrics_, RouterOptions{}, AuthContext{},
                                           Parts());
    token_ = CreateToken(*store_, clock_, "alpha", kScopeRead | kScopeAct, "")->secret;
    reader_ = CreateToken(*store_, clock_, "alpha", kScopeRead, "")->secret;
  }

  HttpRequest Post(const std::string& target, std::string body, const std::string& token) {
    HttpRequest r{"POST",
                  target,
                  {{"host", "127.0.0.1:8787"},
                   {"content-type", "application/json"},
                   {"accept", "application/json, text/event-stream"}},
                  std::move(body)};
    if (!token.empty()) r.headers.emplace_back("authorization", "Bearer " + token);
    return r;
  }

  // An authenticated request with this method and target, and no body.
  HttpRequest Bare(const std::string& method, const std::string& target) {
    HttpRequest r = Post(target, "", token_);
    r.method = method;
    return r;
  }

  // A stateless-era POST /mcp with these Mcp-Method and (if not empty) Mcp-Name headers.
  HttpRequest Headed(const std::string& method, const std::string& name = "",
                     const std::string& target = "/mcp") {
    HttpRequest r = Post(target, "{}", token_);
    r.headers.emplace_back("mcp-method", method);
    if (!name.empty()) r.headers.emplace_back("mcp-name", name);
    return r;
  }
  HttpRequest Call(const std::string& tool) { return Headed("tools/call", tool); }

  // Registers a tool `name` without annotations that answers {}.
  void AddTestTool(const std::string& name, bool calls_out) {
    ToolDef def;
    def.name = name;
    def.description = "A test tool.";
    def.input_schema = json{{"type", "object"}};
    def.calls_out = calls_out;
    def.handler = [](ToolContext&, const json&) { return ToolReply::Ok(json::object()); };
    ASSERT_TRUE(registry_.Add(def).ok());
  }

  HttpResponse Send(const HttpRequest& req) {
    RequestLog log;
    return router_->Handle(req, log);
  }

  static std::string Initialize() {
    return R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";
  }

  // The parts `cortex serve` wires in, with the OAuth authorization server.
  RouterParts Parts() { return CortexRouterParts(*store_, clock_, {&oauth_}); }

  static const std::string* Find(const HttpResponse& r, const std::string& name) {
    for (const auto& [k, v] : r.headers) {
      if (k == name) return &v;
    }
    return nullptr;
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-10T09:00:00Z")};
  EngineConfig config_;
  ToolRegistry registry_;
  Metrics metrics_;
  OAuthApi oauth_{*store_, clock_};
  std::unique_ptr<McpServer> mcp_;
  std::unique_ptr<HttpRouter> router_;
  std::string token_, reader_;
};

TEST_F(HttpRouterTest, HealthNeedsNoToken) {
  HttpRequest r{"GET", "/healthz", {}, ""};
  EXPECT_EQ(Send(r).status, 200);
}

TEST_F(HttpRouterTest, MissingOrWrongTokenIs401WithChallenge) {
  HttpResponse none = Send(Post("/mcp", Initialize(), ""));
  EXPECT_EQ(none.status, 401);
  ASSERT_NE(Find(none, "WWW-Authenticate"), nullptr);
  EXPECT_EQ(Find(none, "WWW-Authenticate")->rfind("Bearer", 0), 0u);
  HttpResponse wrong = Send(Post("/mcp", Initialize(), "ctk_" + std::string(48, '0')));
  EXPECT_EQ(wrong.status, 401);
  EXPECT_NE(Find(wrong, "WWW-Authenticate")->find("invalid_token"), std::string::npos);
}

// A client that meets a 401 finds the server's protected-resource metadata from the challenge
// (RFC 9728 §5.1), and there the authorization server and the scopes.
TEST_F(HttpRouterTest, A401NamesTheProtectedResourceMetadata) {
  HttpResponse none = Send(Post("/mcp", Initialize(), ""));
  ASSERT_EQ(none.status, 401);
  EXPECT_EQ(*Find(none, "WWW-Authenticate"),
            "Bearer realm=\"cortex\", resource_metadata=\"http://127.0.0.1:8787/.well-known/"
            "oauth-protected-resource/mcp\", scope=\"read act\"");
  for (const char* path :
       {"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}) {
    HttpResponse meta = Send(HttpRequest{"GET", path, {{"host", "127.0.0.1:8787"}}, ""});
    ASSERT_EQ(meta.status, 200) << path;
    json m = json::parse(meta.body);
    EXPECT_EQ(m["resource"], "http://127.0.0.1:8787/mcp");
    EXPECT_EQ(m["authorization_servers"], json::array({"http://127.0.0.1:8787"}));
    EXPECT_EQ(m["scopes_supported"], json::array({"read", "act", "approve"}));
    EXPECT_EQ(m["bearer_methods_supported"], json::array({"header"}));
  }
  HttpResponse post = Send(Post("/.well-known/oauth-protected-resource", "{}", ""));
  EXPECT_EQ(post.status, 405);
}

// The consent page may fetch an app's metadata document and remember it: never on an I/O
// thread, never inside a read snapshot.
TEST_F(HttpRouterTest, TheConsentPageRunsOffTheIoThreads) {
  HttpRequest consent{"GET", "/inbox/authorize?client_id=https%3A%2F%2Fa.example%2Fc", {}, ""};
  EXPECT_TRUE(router_->MayWrite(consent));
  EXPECT_TRUE(router_->MayCallOut(consent));
  HttpRequest metadata{"GET", "/.well-known/oauth-authorization-server", {}, ""};
  EXPECT_FALSE(router_->MayWrite(metadata));
  EXPECT_FALSE(router_->MayCallOut(metadata));
  EXPECT_TRUE(router_->MayWrite(HttpRequest{"POST", "/oauth/token", {}, ""}));
}

// Behind a proxy the configured public URL names the server, whatever Host the proxy sends.
TEST_F(HttpRouterTest, ThePublicUrlNamesTheResourceBehindAProxy) {
  RouterOptions options;
  options.public_url = "https://cortex.example.org";
  options.check_host = false;
  HttpRouter router(*mcp_, *store_, metrics_, options, AuthContext{}, Parts());
  RequestLog log;
  HttpResponse meta = router.Handle(
      HttpRequest{"GET", "/.well-known/oauth-protected-resource/mcp", {{"host", "10.0.0.5"}}, ""},
      log);
  json m = json::parse(meta.body);
  EXPECT_EQ(m["resource"], "https://cortex.example.org/mcp");
  EXPECT_EQ(m["authorization_servers"], json::array({"https://cortex.example.org"}));
  HttpResponse none = router.Handle(Post("/mcp", Initialize(), ""), log);
  EXPECT_NE(Find(none, "WWW-Authenticate")
                ->find("resource_metadata=\"https://cortex.example.org/.well-known/"
                       "oauth-protected-resource/mcp\""),
            std::string::npos);
}

// A 401 reads the same for a token that never existed, one revoked and one malformed:
// nothing tells a prober which guesses were once real.
TEST_F(HttpRouterTest, A401SaysNothingOfWhyTheTokenFailed) {
  auto made = CreateToken(*store_, clock_, "alpha", kScopeRead, "to-revoke");
  ASSERT_TRUE(made.ok());
  ASSERT_TRUE(RevokeToken(*store_, clock_, "alpha", made->record.id).ok());
  std::vector<HttpResponse> answers;
  for (const std::string& bad : {made->secret, "ctk_" + std::string(48, '0'), std::string("x")}) {
    answers.push_back(Send(Post("/mcp", Initialize(), bad)));
  }
  for (const HttpResponse& r : answers) {
    EXPECT_EQ(r.status, 401);
    EXPECT_EQ(r.body, answers[0].body);
    ASSERT_NE(Find(r, "WWW-Authenticate"), nullptr);
    EXPECT_EQ(*Find(r, "WWW-Authenticate"), *Find(answers[0], "WWW-Authenticate"));
    EXPECT_EQ(r.body.find("revoked"), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find("unknown"), std::string::npos) << r.body;
  }
}

// A head that two readers could read as two requests is refused before anything is
// routed (the transport answers 400 and closes).
TEST_F(HttpRouterTest, FramingProblemsAreFoundInTheHead) {
  auto head = [](std::vector<std::pair<std::string, std::string>> headers) {
    return HttpRequest{"POST", "/mcp", std::move(headers), ""};
  };
  const std::pair<std::string, std::string> host{"host", "127.0.0.1:8787"};
  EXPECT_EQ(HttpRouter::FramingProblem(head({host}), true), std::nullopt);
  EXPECT_EQ(HttpRouter::FramingProblem(head({}), false), std::nullopt);  // HTTP/1.0: no Host
  auto problem = [&](std::vector<std::pair<std::string, std::string>> headers, bool http11,
                     const std::string& words) {
    auto p = HttpRouter::FramingProblem(head(std::move(headers)), http11);
    ASSERT_TRUE(p.has_value()) << words;
    EXPECT_NE(p->find(words), std::string::npos) << *p;
  };
  problem({}, true, "needs a Host header");
  problem({host, host}, true, "host appears more than once");
  problem({host, {"authorization", "Bearer a"}, {"authorization", "Bearer b"}}, true,
          "authorization appears more than once");
  problem({host, {"mcp-name", "a"}, {"mcp-name", "b"}}, true, "mcp-name appears more than once");
  problem({host, {"x-pad", std::string("a\0b", 3)}}, true, "control character");
  problem({host, {"transfer-encoding", "gzip, chunked"}}, true, "exactly 'chunked'");
  problem({host, {"transfer-encoding", "gzip"}}, true, "exactly 'chunked'");
  problem({host, {"transfer-encoding", "chunked"}}, false, "needs HTTP/1.1");
  EXPECT_EQ(HttpRouter::FramingProblem(head({host, {"transfer-encoding", " Chunked "}}), true),
            std::nullopt);
  // Fields that may repeat do.
  EXPECT_EQ(HttpRouter::FramingProblem(head({host, {"accept", "a"}, {"accept", "b"}}), true),
            std::nullopt);
}

// /metrics answers only allowed Hosts, and only with its token once the operator set one.
TEST_F(HttpRouterTest, MetricsNeedAnAllowedHostAndItsToken) {
  HttpRequest foreign{"GET", "/metrics", {{"host", "evil.example.com"}}, ""};
  EXPECT_EQ(Send(foreign).status, 403);
  HttpRequest local{"GET", "/metrics", {{"host", "127.0.0.1:8787"}}, ""};
  EXPECT_EQ(Send(local).status, 200);

  RouterOptions with_token;
  with_token.metrics_token = "s3cret-metrics";
  router_ =
      std::make_unique<HttpRouter>(*mcp_, *store_, metrics_, with_token, AuthContext{}, Parts());
  HttpResponse none = Send(local);
  EXPECT_EQ(none.status, 401);
  ASSERT_NE(Find(none, "WWW-Authenticate"), nullptr);
  HttpRequest wrong = local;
  wrong.headers.emplace_back("authorization", "Bearer " + token_);  // a workspace's token
  EXPECT_EQ(Send(wrong).status, 401);
  HttpRequest right = local;
  right.headers.emplace_back("authorization", "Bearer s3cret-metrics");
  HttpResponse ok = Send(right);
  EXPECT_EQ(ok.status, 200);
  EXPECT_NE(ok.body.find("cortex_requests_in_flight"), std::string::npos);
  HttpRequest right_foreign = right;
  right_foreign.headers[0].second = "evil.example.com";
  EXPECT_EQ(Send(right_foreign).status, 403);
}

// A workspace's or token's session cap is the caller's own: 429 with a Retry-After, where
// the server's own cap (everyone's) is a 503.
TEST_F(HttpRouterTest, SessionCapsAre429ForTheCallerAnd503ForTheServer) {
  mcp_->SetSessionLimits(SessionLimits{.total = 2, .per_workspace = 10, .per_token = 1});
  EXPECT_EQ(Send(Post("/mcp", Initialize(), token_)).status, 200);
  HttpResponse mine = Send(Post("/mcp", Initialize(), token_));
  EXPECT_EQ(mine.status, 429);
  ASSERT_NE(Find(mine, "Retry-After"), nullptr);
  EXPECT_EQ(json::parse(mine.body)["error"]["code"], rpc::kInternalError);
  EXPECT_EQ(Send(Post("/mcp", Initialize(), reader_)).status, 200);
  auto other = CreateToken(*store_, clock_, "beta", kScopeRead, "");
  HttpResponse full = Send(Post("/mcp", Initialize(), other->secret));
  EXPECT_EQ(full.status, 503);
  EXPECT_EQ(*Find(full, "Retry-After"), "1");
}

TEST_F(HttpRouterTest, InitializeIssuesASession) {
  HttpResponse r = Send(Post("/mcp", Initialize(), token_));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  ASSERT_NE(Find(r, "Mcp-Session-Id"), nullptr);
  EXPECT_EQ(json::parse(r.body)["result"]["protocolVersion"], "2025-11-25");
}

TEST_F(HttpRouterTest, ForeignOriginAndHostAre403) {
  HttpRequest r = Post("/mcp", Initialize(), token_);
  r.headers.emplace_back("origin", "http://evil.example.com");
  EXPECT_EQ(Send(r).status, 403);
  HttpRequest h = Post("/mcp", Initialize(), token_);
  h.headers[0].second = "evil.example.com";
  EXPECT_EQ(Send(h).status, 403);
  HttpRequest ok = Post("/mcp", Initialize(), token_);
  ok.headers.emplace_back("origin", "http://localhost:6274");
  EXPECT_EQ(Send(ok).status, 200);
}

TEST_F(HttpRouterTest, MalformedBodiesAre400) {
  EXPECT_EQ(Send(Post("/mcp", "{not json", token_)).status, 400);
  HttpResponse batch = Send(Post("/mcp", "[" + Initialize() + "]", token_));
  EXPECT_EQ(batch.status, 400);
  EXPECT_EQ(json::parse(batch.body)["error"]["code"], rpc::kInvalidRequest);
}

TEST_F(HttpRouterTest, ContentTypeAndAcceptAreChecked) {
  HttpRequest r = Post("/mcp", Initialize(), token_);
  r.headers[1].second = "text/plain";
  EXPECT_EQ(Send(r).status, 415);
  HttpRequest a = Post("/mcp", Initialize(), token_);
  a.headers[2].second = "text/html";
  EXPECT_EQ(Send(a).status, 406);
}

TEST_F(HttpRouterTest, SseOnlyClientsGetAnEventStream) {
  HttpRequest r = Post("/mcp", Initialize(), token_);
  r.headers[2].second = "text/event-stream";
  HttpResponse res = Send(r);
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.content_type, "text/event-stream");
  EXPECT_EQ(res.body.rfind("event: message\ndata: {", 0), 0u) << res.body;
}

TEST_F(HttpRouterTest, StatelessUnknownMethodIs404) {
  HttpRequest r = Post(
      "/mcp",
      R"({"jsonrpc":"2.0","id":1,"method":"nope","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})",
      token_);
  r.headers.emplace_back("mcp-protocol-version", "2026-07-28");
  r.headers.emplace_back("mcp-method", "nope");
  HttpResponse res = Send(r);
  EXPECT_EQ(res.status, 404);
  EXPECT_EQ(json::parse(res.body)["error"]["code"], rpc::kMethodNotFound);
}

// A session look-up the store cannot answer is "try again" (503), never "Session not
// found" (404), which would tell the client to throw its session away.
TEST_F(HttpRouterTest, AStoreThatCannotAnswerIsA503NotALostSession) {
  FlakyStore flaky(*store_);
  McpServer mcp(registry_, flaky, clock_, ServerInfo{});
  HttpRouter router(mcp, flaky, metrics_, RouterOptions{}, AuthContext{},
                    CortexRouterParts(flaky, clock_));
  RequestLog log;
  std::string sid = *Find(router.Handle(Post("/mcp", Initialize(), token_), log), "Mcp-Session-Id");
  HttpRequest list = Post("/mcp", R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})", token_);
  list.headers.emplace_back("mcp-session-id", sid);
  list.headers.emplace_back("mcp-protocol-version", "2025-11-25");
  HttpRequest del{
      "DELETE", "/mcp", {{"authorization", "Bearer " + token_}, {"mcp-session-id", sid}}, ""};
  HttpRequest get = del;
  get.method = "GET";
  get.headers.emplace_back("accept", "text/event-stream");
  for (const HttpRequest* req : {&list, &del, &get}) {
    flaky.FailAfter(1);  // authentication answers; the session's own look-up does not
    HttpResponse r = router.Handle(*req, log);
    EXPECT_EQ(r.status, 503) << req->method << " " << r.body;
    EXPECT_NE(Find(r, "Retry-After"), nullptr) << req->method;
    EXPECT_EQ(r.body.find("store down"), std::string::npos) << r.body;  // no internals
  }
  flaky.FailAfter(1);
  HttpResponse opened = router.Handle(Post("/mcp", Initialize(), token_), log);
  EXPECT_EQ(opened.status, 503) << opened.body;
  EXPECT_EQ(Find(opened, "Mcp-Session-Id"), nullptr);
  // Back up: the session was never lost.
  flaky.Heal();
  EXPECT_EQ(router.Handle(list, log).status, 200);
  EXPECT_EQ(router.Handle(del, log).status, 200);
}

TEST_F(HttpRouterTest, SessionStreamsAndDelete) {
  std::string sid = *Find(Send(Post("/mcp", Initialize(), token_)), "Mcp-Session-Id");
  HttpRequest get{"GET",
                  "/mcp",
                  {{"authorization", "Bearer " + token_},
                   {"accept", "text/event-stream"},
                   {"mcp-session-id", sid}},
                  ""};
  HttpResponse stream = Send(get);
  EXPECT_EQ(stream.status, 200);
  EXPECT_TRUE(stream.open_stream);
  std::string state;
  EXPECT_EQ(router_->StreamNext(sid, state), std::string());
  // At most kMaxStreamsPerSession streams per session; closing one frees a slot.
  for (size_t i = 1; i < limits::kMaxStreamsPerSession; ++i) EXPECT_EQ(Send(get).status, 200);
  EXPECT_EQ(Send(get).status, 429);
  router_->StreamClosed(sid);
  EXPECT_EQ(Send(get).status, 200);
  HttpRequest del = get;
  del.method = "DELETE";
  EXPECT_EQ(Send(del).status, 200);
  EXPECT_EQ(router_->StreamNext(sid, state), std::nullopt);
  EXPECT_EQ(Send(del).status, 404);
  HttpRequest no_session{"GET", "/mcp", {{"authorization", "Bearer " + token_}}, ""};
  EXPECT_EQ(Send(no_session).status, 405);
}

TEST_F(HttpRouterTest, IngestNeedsActScopeAndReportsLineErrors) {
  std::string line =
      R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-10T08:55:00Z","counterparty":"a@b.example","summary":"hi"})";
  HttpResponse read_only = Send(Post("/v1/episodes", line, reader_));
  EXPECT_EQ(read_only.status, 403);
  HttpResponse ok = Send(Post("/v1/episodes", line, token_));
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(json::parse(ok.body)["episodes_added"], 1);
  HttpResponse bad = Send(Post("/v1/episodes", line + "\n{\"type\":\"episode\"}", token_));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["message"].get<std::string>().rfind("line 2:", 0), 0u);
}

TEST_F(HttpRouterTest, BodyLimitsByRoute) {
  EXPECT_EQ(HttpRouter::BodyLimit("/mcp"), limits::kMaxRequestBodyBytes);
  EXPECT_EQ(HttpRouter::BodyLimit("/v1/episodes"), limits::kMaxIngestBodyBytes);
  HttpResponse mcp = HttpRouter::TooLarge("/mcp");
  EXPECT_EQ(mcp.status, 413);
  EXPECT_EQ(json::parse(mcp.body)["error"]["code"], -32600);
  HttpResponse ingest = HttpRouter::TooLarge("/v1/episodes?x=1");
  EXPECT_EQ(ingest.status, 413);
  EXPECT_EQ(json::parse(ingest.body)["error"], "payload_too_large");
  EXPECT_NE(json::parse(ingest.body)["message"].get<std::string>().find("33554432"),
            std::string::npos);
}

TEST_F(HttpRouterTest, MetricsArePrometheusText) {
  metrics_.Record("tools/call", "entity.lookup", "not_found", 0.0004);
  HttpResponse r = Send(HttpRequest{"GET", "/metrics", {}, ""});
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("cortex_requests_total{method=\"tools/call\",tool=\"entity.lookup\","
                        "status=\"not_found\"} 1"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("cortex_request_duration_seconds_bucket{le=\"0.0005\"} 1"),
            std::string::npos);
  EXPECT_NE(r.body.find("cortex_requests_in_flight 0"), std::string::npos);
}

TEST_F(HttpRouterTest, UnknownPathIs404) {
  HttpRequest r{"GET", "/nope", {}, ""};
  EXPECT_EQ(Send(r).status, 404);
}

TEST_F(HttpRouterTest, ClientsCannotMintMetricKeys) {
  RequestLog log;
  router_->Handle(HttpRequest{"GET", "/random-path-12345", {}, ""}, log);
  EXPECT_EQ(log.route, "GET other");
  router_->Handle(
      Post(
          "/mcp",
          R"({"jsonrpc":"2.0","id":1,"method":"made/up/123","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})",
          token_),
      log);
  EXPECT_EQ(log.method, "other");
}

// Requests that may wait for a commit run off the I/O threads; reads stay on them.
TEST_F(HttpRouterTest, WritesAreToldApartFromReads) {
  EXPECT_FALSE(router_->MayWrite(Call("decision.inspect")));
  EXPECT_FALSE(router_->MayWrite(Call("meta.why_this_action")));
  EXPECT_TRUE(router_->MayWrite(Call("action.communicate")));
  EXPECT_TRUE(router_->MayWrite(Call("action.approve")));
  EXPECT_TRUE(router_->MayWrite(Call("no.such_tool")));  // unknown: assume the worst
  AddTestTool("test.bare", false);  // annotations are optional: without them a tool may write
  EXPECT_TRUE(router_->MayWrite(Call("test.bare")));
  EXPECT_TRUE(router_->MayWrite(Headed("initialize")));
  EXPECT_FALSE(router_->MayWrite(Headed("tools/list")));
  // A task's state is written by tasks/update and tasks/cancel (and a draft's by tasks/get).
  EXPECT_TRUE(router_->MayWrite(Headed("tasks/update")));
  EXPECT_TRUE(router_->MayWrite(Headed("tasks/cancel")));
  EXPECT_TRUE(router_->MayWrite(Headed("tasks/get")));
  // The session era has no Mcp-Method header: its POSTs may write (initialize, a tool).
  EXPECT_TRUE(router_->MayWrite(Post("/mcp", Initialize(), token_)));
  EXPECT_TRUE(router_->MayWrite(Post("/v1/episodes", "", token_)));
  EXPECT_TRUE(router_->MayWrite(Bare("DELETE", "/mcp")));
  EXPECT_FALSE(router_->MayWrite(Bare("GET", "/healthz")));
}

// A request that may wait on the network (a model drafting a message) never runs on an
// I/O thread; every other write may.
TEST_F(HttpRouterTest, RequestsThatMayCallAModelAreToldApart) {
  // The built-in drafter calls nothing: no request may.
  EXPECT_FALSE(router_->MayCallOut(Call("action.communicate")));
  EXPECT_FALSE(router_->MayCallOut(Call("no.such_tool")));
  EXPECT_FALSE(router_->MayCallOut(Post("/mcp", Initialize(), token_)));

  EngineConfig with_model;
  with_model.actions.drafter.kind = "openai";
  EXPECT_TRUE(ActionCommunicateTool(with_model).calls_out);
  EXPECT_FALSE(ActionCommunicateTool(config_).calls_out);

  AddTestTool("test.model", true);
  EXPECT_TRUE(router_->MayCallOut(Call("test.model")));
  EXPECT_FALSE(router_->MayCallOut(Call("action.communicate")));
  EXPECT_FALSE(router_->MayCallOut(Call("action.approve")));
  // The name is read as the MCP server reads it: base64-encoded (2026-07-28 §Value
  // Encoding) it is the same tool. One that is malformed or no tool's might be anything
  // once decoded otherwise, so it is taken for the worst (such a call is refused anyway).
  EXPECT_TRUE(router_->MayCallOut(Call("=?base64?dGVzdC5tb2RlbA==?=")));       // test.model
  EXPECT_FALSE(router_->MayCallOut(Call("=?base64?YWN0aW9uLmFwcHJvdmU=?=")));  // action.approve
  EXPECT_TRUE(router_->MayCallOut(Call("=?base64?not base64?=")));
  EXPECT_TRUE(router_->MayCallOut(Call("no.such_tool")));
  EXPECT_TRUE(router_->MayCallOut(Headed("tools/call", "", "/mcp?x=1")));  // no Mcp-Name
  EXPECT_FALSE(router_->MayCallOut(Headed("tools/list")));
  // The session era names no tool in its headers: any POST might be that tool's call.
  EXPECT_TRUE(router_->MayCallOut(Post("/mcp", Initialize(), token_)));
  EXPECT_FALSE(router_->MayCallOut(Post("/v1/episodes", "", token_)));
  EXPECT_FALSE(router_->MayCallOut(Bare("DELETE", "/mcp")));
}

}  // namespace
}  // namespace cortex

namespace cortex {
namespace {

// A 2026-07-28 episode.ingest of `n` lines, with a progressToken.
std::string IngestCall(int n) {
  json lines = json::array();
  for (int i = 0; i < n; ++i) {
    lines.push_back({{"type", "episode"},
                     {"kind", "message_sent"},
                     {"occurred_at", "2026-06-01T09:00:00Z"},
                     {"counterparty", "p" + std::to_string(i % 20) + "@x.example"},
                     {"summary", "note"},
                     {"external_id", "e-" + std::to_string(i)}});
  }
  return json{{"jsonrpc", "2.0"},
              {"id", 5},
              {"method", "tools/call"},
              {"params",
               {{"name", "episode.ingest"},
                {"arguments", {{"lines", lines}}},
                {"_meta",
                 {{"progressToken", "pt"},
                  {"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                  {"io.modelcontextprotocol/clientCapabilities", json::object()}}}}}}
      .dump();
}

TEST_F(HttpRouterTest, AnIngestCallGetsTheIngestBodyLimitByItsMcpName) {
  EXPECT_EQ(HttpRouter::BodyLimit(Call("episode.ingest")), limits::kMaxIngestBodyBytes);
  EXPECT_EQ(HttpRouter::BodyLimit(Call("rule.learn")), limits::kMaxRequestBodyBytes);
  EXPECT_EQ(HttpRouter::BodyLimit(Headed("tools/call")), limits::kMaxRequestBodyBytes);
  EXPECT_EQ(HttpRouter::BodyLimit(Post("/v1/episodes", "", token_)), limits::kMaxIngestBodyBytes);
  HttpRequest get = Call("episode.ingest");
  get.method = "GET";
  EXPECT_EQ(HttpRouter::BodyLimit(get), limits::kMaxRequestBodyBytes);
  EXPECT_EQ(HttpRouter::TooLarge(Call("episode.ingest")).status, 413);
  EXPECT_NE(HttpRouter::TooLarge(Call("episode.ingest"))
                .body.find(std::to_string(limits::kMaxIngestBodyBytes)),
            std::string::npos);
}

TEST_F(HttpRouterTest, LongCallsAreKnownByHeaderOrBody) {
  EXPECT_TRUE(router_->IsLongCall(Call("episode.ingest")));
  EXPECT_TRUE(router_->IsLongCall(Call("rule.learn")));
  EXPECT_FALSE(router_->IsLongCall(Call("rule.list")));
  EXPECT_FALSE(router_->IsLongCall(Headed("tools/list")));
  // The session era has no Mcp-Method: the body decides.
  HttpRequest session =
      Post("/mcp", R"({"method":"tools/call","params":{"name":"rule.learn"}})", token_);
  session.headers.emplace_back("mcp-session-id", "abc");
  EXPECT_TRUE(router_->IsLongCall(session));
  session.body = R"({"method":"tools/call","params":{"name":"rule.list"}})";
  EXPECT_FALSE(router_->IsLongCall(session));
}

TEST_F(HttpRouterTest, ALiveCallEmitsItsProgressAheadOfItsResult) {
  HttpRequest req = Call("episode.ingest");
  req.headers.emplace_back("mcp-protocol-version", "2026-07-28");
  req.body = IngestCall(1300);
  std::vector<std::string> emitted;
  req.emit = [&](std::string event) { emitted.push_back(std::move(event)); };
  req.gone = std::make_shared<std::atomic<bool>>(false);
  HttpResponse r = Send(req);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/event-stream");
  ASSERT_GE(emitted.size(), 2u);
  for (const std::string& e : emitted) {
    EXPECT_EQ(e.rfind("event: message\ndata: {", 0), 0u) << e;
    EXPECT_NE(e.find("notifications/progress"), std::string::npos) << e;
  }
  EXPECT_NE(emitted.back().find("\"progress\":1300"), std::string::npos) << emitted.back();
  // The response holds the result alone: the progress went out already.
  EXPECT_EQ(r.body.find("notifications/progress"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"episodes_added\":1300"), std::string::npos) << r.body;
}

TEST_F(HttpRouterTest, ACallWhoseClientIsGoneIsNotAnswered) {
  HttpRequest req = Call("episode.ingest");
  req.headers.emplace_back("mcp-protocol-version", "2026-07-28");
  req.body = IngestCall(1300);
  req.gone = std::make_shared<std::atomic<bool>>(true);
  HttpResponse r = Send(req);
  EXPECT_EQ(r.status, 202);
  EXPECT_TRUE(r.body.empty()) << r.body;
  // Nothing of it was written: the same batch then lands whole.
  req.gone->store(false);
  r = Send(req);
  EXPECT_NE(r.body.find("\"episodes_added\":1300"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace cortex
