#include "protocol/mcp_server.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/json_text.h"
#include "core/time.h"
#include "engines/world/ingest.h"
#include "protocol/jsonrpc.h"
#include "testing/temp_store.h"
#include "tools/cortex_tools.h"

namespace cortex {
namespace {

using nlohmann::json;

class McpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterCortexTools(registry_, config_).ok());
    registry_.set_check_output(true);
    auto ws = EnsureWorkspace(*store_, clock_, "alpha");
    auth_ = AuthContext{ws->id, ws->name, "tok_x", kScopeRead};
    server_ = std::make_unique<McpServer>(registry_, *store_, clock_, ServerInfo{});
  }

  McpResponse Send(const json& msg, std::optional<std::string> session = std::nullopt,
                   McpTransport transport = McpTransport::kStdio) {
    std::string body = msg.dump();
    McpRequest req;
    req.body = body;
    req.transport = transport;
    req.auth = &auth_;
    req.session_id = std::move(session);
    return server_->Handle(req);
  }

  McpResponse Open(McpTransport transport, const AuthContext& auth) {
    std::string body = json{{"jsonrpc", "2.0"},
                            {"id", 1},
                            {"method", "initialize"},
                            {"params",
                             {{"protocolVersion", "2025-06-18"},
                              {"capabilities", json::object()},
                              {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}}
                           .dump();
    McpRequest req;
    req.body = body;
    req.transport = transport;
    req.auth = &auth;
    return server_->Handle(req);
  }

  std::string Initialize(McpTransport transport = McpTransport::kStdio) {
    McpResponse r = Open(transport, auth_);
    EXPECT_EQ(r.body["result"]["protocolVersion"], "2025-06-18");
    EXPECT_FALSE(r.new_session_id.empty());
    return r.new_session_id;
  }

  // A 2026-07-28 tools/call of `tool` over HTTP with headers that match it; the request
  // points into http_body_.
  McpRequest HttpToolCall(const std::string& tool) {
    http_body_ = Modern("tools/call", {{"name", tool}, {"arguments", json::object()}}).dump();
    McpRequest req;
    req.body = http_body_;
    req.transport = McpTransport::kHttp;
    req.auth = &auth_;
    req.protocol_version_header = "2026-07-28";
    req.method_header = "tools/call";
    req.name_header = tool;
    return req;
  }

  static json Modern(const std::string& method, json params = json::object()) {
    params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                       {"io.modelcontextprotocol/clientCapabilities", json::object()}};
    return {{"jsonrpc", "2.0"}, {"id", "m1"}, {"method", method}, {"params", params}};
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-10T09:00:00Z")};
  EngineConfig config_;
  ToolRegistry registry_;
  AuthContext auth_;
  std::unique_ptr<McpServer> server_;
  std::string http_body_;
};

TEST_F(McpServerTest, SessionEraHandshakePingAndTools) {
  std::string sid = Initialize();
  McpResponse note = Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, sid);
  EXPECT_EQ(note.disposition, Disposition::kAccepted);
  EXPECT_TRUE(note.body.is_null());
  McpResponse ping = Send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}}, sid);
  EXPECT_EQ(ping.body["result"], json::object());
  McpResponse list = Send({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tools/list"}}, sid);
  ASSERT_EQ(list.body["result"]["tools"].size(), 15u);
  EXPECT_EQ(list.body["result"]["tools"][0]["name"], "workspace.status");
  EXPECT_EQ(list.body["result"]["tools"][1]["name"], "entity.lookup");
  EXPECT_FALSE(list.body["result"].contains("resultType"));
}

TEST_F(McpServerTest, UnknownVersionNegotiatesToNewestSessionEra) {
  McpResponse r =
      Send({{"jsonrpc", "2.0"},
            {"id", 1},
            {"method", "initialize"},
            {"params", {{"protocolVersion", "2024-01-01"}, {"capabilities", json::object()}}}});
  EXPECT_EQ(r.body["result"]["protocolVersion"], "2025-11-25");
}

TEST_F(McpServerTest, SessionEraNeedsASessionAndOnlyItsWorkspaceSeesIt) {
  McpResponse none = Send({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tools/list"}});
  EXPECT_EQ(none.disposition, Disposition::kRejected);
  EXPECT_EQ(none.body["error"]["code"], rpc::kSessionRequired);
  std::string sid = Initialize(McpTransport::kHttp);
  AuthContext other{"ws_other", "beta", "tok_y", kScopeRead};
  EXPECT_FALSE(*server_->SessionExists(sid, other));
  EXPECT_FALSE(*server_->EndSession(sid, other));
  EXPECT_TRUE(*server_->EndSession(sid, auth_));
  McpResponse gone =
      Send({{"jsonrpc", "2.0"}, {"id", 4}, {"method", "tools/list"}}, sid, McpTransport::kHttp);
  EXPECT_EQ(gone.disposition, Disposition::kUnknownSession);
  EXPECT_EQ(gone.body["error"]["code"], rpc::kSessionNotFound);
}

// Open HTTP sessions are capped per token, per workspace and in all, each cap refused in
// its own words; one tenant filling its caps leaves the others theirs, and stdio's session
// (the process's own) is under none of them.
TEST_F(McpServerTest, SessionsAreCappedPerTokenPerWorkspaceAndInAll) {
  server_->SetSessionLimits(SessionLimits{.total = 5, .per_workspace = 3, .per_token = 2});
  auto refused = [](const McpResponse& r, Disposition d, const std::string& words) {
    EXPECT_EQ(r.disposition, d);
    EXPECT_TRUE(r.new_session_id.empty());
    EXPECT_EQ(r.body["error"]["code"], rpc::kInternalError);
    std::string message = r.body["error"].value("message", "");
    EXPECT_NE(message.find(words), std::string::npos) << message;
  };
  const auto http = McpTransport::kHttp;
  std::string first = Initialize(http);
  Initialize(http);
  refused(Open(http, auth_), Disposition::kLimited, "for this token (at most 2)");
  EXPECT_EQ(Open(http, auth_).status, "too_many_sessions");

  // Another token of the same workspace has its own 2, within the workspace's 3.
  AuthContext second{auth_.workspace_id, auth_.workspace_name, "tok_second", kScopeRead};
  EXPECT_FALSE(Open(http, second).new_session_id.empty());
  refused(Open(http, second), Disposition::kLimited, "for this workspace (at most 3)");

  // stdio opens its session whatever the caps, and serves it.
  std::string mine = Initialize(McpTransport::kStdio);
  McpResponse list = Send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}}, mine);
  EXPECT_EQ(list.disposition, Disposition::kReply);
  EXPECT_TRUE(list.body["result"]["tools"].is_array());

  // Other workspaces are not held up by alpha's, until the server's own cap is reached.
  auto beta = EnsureWorkspace(*store_, clock_, "beta");
  auto gamma = EnsureWorkspace(*store_, clock_, "gamma");
  AuthContext b1{beta->id, beta->name, "tok_b1", kScopeRead};
  AuthContext b2{beta->id, beta->name, "tok_b2", kScopeRead};
  AuthContext g{gamma->id, gamma->name, "tok_g", kScopeRead};
  EXPECT_FALSE(Open(http, b1).new_session_id.empty());
  EXPECT_FALSE(Open(http, b2).new_session_id.empty());
  refused(Open(http, g), Disposition::kUnavailable, "for the server (at most 5)");

  // Ending a session frees its place in every count it was in.
  EXPECT_TRUE(*server_->EndSession(first, auth_));
  EXPECT_FALSE(Initialize(http).empty());
  // Idle sessions count for nothing once they have expired.
  clock_.Advance(limits::kSessionIdleExpiry + std::chrono::minutes(1));
  EXPECT_FALSE(Open(http, g).new_session_id.empty());
  EXPECT_FALSE(Initialize(http).empty());
}

TEST_F(McpServerTest, StatelessEraDiscoverAndList) {
  McpResponse d = Send(Modern("server/discover"));
  EXPECT_EQ(d.body["id"], "m1");
  EXPECT_EQ(d.body["result"]["resultType"], "complete");
  EXPECT_EQ(d.body["result"]["supportedVersions"][0], "2026-07-28");
  EXPECT_TRUE(d.body["result"]["capabilities"].contains("tools"));
  EXPECT_EQ(d.body["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "cortex");
  McpResponse l = Send(Modern("tools/list"));
  EXPECT_EQ(l.body["result"]["cacheScope"], "public");
  EXPECT_GE(l.body["result"]["ttlMs"].get<int64_t>(), 0);
  EXPECT_EQ(l.body["result"]["tools"].size(), 15u);
}

TEST_F(McpServerTest, StatelessEraRefusals) {
  json bad_version = Modern("tools/list");
  bad_version["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "1900-01-01";
  McpResponse v = Send(bad_version);
  EXPECT_EQ(v.disposition, Disposition::kRejected);
  EXPECT_EQ(v.body["error"]["code"], rpc::kUnsupportedProtocolVersion);
  EXPECT_EQ(v.body["error"]["data"]["requested"], "1900-01-01");

  json no_caps = Modern("tools/list");
  no_caps["params"]["_meta"].erase("io.modelcontextprotocol/clientCapabilities");
  EXPECT_EQ(Send(no_caps).body["error"]["code"], rpc::kInvalidParams);

  McpResponse ping = Send(Modern("ping"));  // removed in 2026-07-28
  EXPECT_EQ(ping.disposition, Disposition::kUnknownMethod);
  EXPECT_EQ(ping.body["error"]["code"], rpc::kMethodNotFound);
}

TEST_F(McpServerTest, HttpHeadersMustMirrorTheBody) {
  McpRequest req = HttpToolCall("workspace.status");
  EXPECT_EQ(server_->Handle(req).disposition, Disposition::kReply);
  req.name_header = "=?base64?d29ya3NwYWNlLnN0YXR1cw==?=";  // "workspace.status"
  EXPECT_EQ(server_->Handle(req).disposition, Disposition::kReply);
  req.name_header = "entity.lookup";
  EXPECT_EQ(server_->Handle(req).body["error"]["code"], rpc::kHeaderMismatch);
  req.name_header = "workspace.status\x7f";
  EXPECT_EQ(server_->Handle(req).body["error"]["code"], rpc::kHeaderMismatch);
  req.name_header.reset();
  EXPECT_EQ(server_->Handle(req).body["error"]["code"], rpc::kHeaderMismatch);
  req.name_header = "workspace.status";
  req.method_header = "tools/list";
  EXPECT_EQ(server_->Handle(req).body["error"]["code"], rpc::kHeaderMismatch);
  req.method_header = "tools/call";
  req.protocol_version_header = "2025-11-25";
  EXPECT_EQ(server_->Handle(req).body["error"]["code"], rpc::kHeaderMismatch);
}

// A name outside visible ASCII travels base64-encoded; sent raw, even matching the body
// byte for byte, it is refused (on every platform, whatever the signedness of char).
TEST_F(McpServerTest, NonAsciiNamesMustBeEncodedInHeaders) {
  const std::string name = "r\xc3\xa9sum\xc3\xa9";  // "résumé" in UTF-8
  McpRequest req = HttpToolCall(name);
  McpResponse raw = server_->Handle(req);
  EXPECT_EQ(raw.body["error"]["code"], rpc::kHeaderMismatch) << raw.body.dump();
  req.name_header = "=?base64?csOpc3Vtw6k=?=";
  McpResponse encoded = server_->Handle(req);  // past the header check: no such tool
  ASSERT_TRUE(encoded.body.contains("error")) << encoded.body.dump();
  EXPECT_NE(encoded.body["error"]["code"], rpc::kHeaderMismatch) << encoded.body.dump();
  EXPECT_NE(encoded.body["error"]["message"].get<std::string>().find(name), std::string::npos)
      << encoded.body.dump();
}

TEST_F(McpServerTest, ToolCallsAndToolErrors) {
  std::string sid = Initialize();
  auto call = [&](json args) {
    return Send({{"jsonrpc", "2.0"},
                 {"id", 7},
                 {"method", "tools/call"},
                 {"params", {{"name", "entity.lookup"}, {"arguments", args}}}},
                sid);
  };
  McpResponse missing = call(json::object());
  const json& result = missing.body["result"];
  EXPECT_TRUE(result["isError"].get<bool>());
  EXPECT_EQ(result["structuredContent"]["error"], "invalid_arguments");
  EXPECT_NE(result["structuredContent"]["message"].get<std::string>().find("identifier"),
            std::string::npos);
  EXPECT_EQ(json::parse(result["content"][0]["text"].get<std::string>()),
            result["structuredContent"]);
  EXPECT_EQ(missing.status, "invalid_arguments");

  McpResponse unknown = call({{"identifier", "nobody@nowhere.example"}});
  EXPECT_EQ(unknown.body["result"]["structuredContent"]["error"], "not_found");

  McpResponse no_tool = Send(
      {{"jsonrpc", "2.0"}, {"id", 8}, {"method", "tools/call"}, {"params", {{"name", "nope"}}}},
      sid);
  EXPECT_EQ(no_tool.body["error"]["code"], rpc::kInvalidParams);

  McpResponse status = Send({{"jsonrpc", "2.0"},
                             {"id", 9},
                             {"method", "tools/call"},
                             {"params", {{"name", "workspace.status"}}}},
                            sid);
  EXPECT_EQ(status.body["result"]["structuredContent"]["workspace"], "alpha");
  EXPECT_FALSE(status.body["result"].contains("isError"));
}

// A tool result carries its body as structuredContent and as content[0].text; the wire
// form writes the text once more instead of serializing the body again. It must be what
// serializing the whole response gives, for a result, a tool error and a JSON-RPC error.
TEST_F(McpServerTest, TheWireFormIsTheWholeResponseSerialized) {
  std::string sid = Initialize();
  auto call = [&](const std::string& tool, json args) {
    return Send({{"jsonrpc", "2.0"},
                 {"id", 3},
                 {"method", "tools/call"},
                 {"params", {{"name", tool}, {"arguments", std::move(args)}}}},
                sid);
  };
  McpResponse status = call("workspace.status", json::object());
  McpResponse refused = call("entity.lookup", json::object());
  McpResponse unknown = call("no.such_tool", json::object());
  for (const McpResponse* r : {&status, &refused}) {
    EXPECT_TRUE(r->text_is_structured);
    EXPECT_EQ(json::parse(DumpBody(*r)), r->body);
    EXPECT_EQ(DumpBody(*r), DumpJson(r->body));
  }
  EXPECT_EQ(status.body["result"]["structuredContent"]["workspace"], "alpha");
  EXPECT_EQ(refused.body["result"]["structuredContent"]["error"], "invalid_arguments");
  EXPECT_FALSE(unknown.text_is_structured);
  EXPECT_EQ(DumpBody(unknown), DumpJson(unknown.body));
  EXPECT_EQ(json::parse(DumpBody(unknown))["error"]["code"], rpc::kInvalidParams);
}

TEST_F(McpServerTest, MissingScopeIsAToolError) {
  AuthContext no_scopes = auth_;
  no_scopes.scopes = 0;
  std::string body = Modern("tools/call", {{"name", "workspace.status"}}).dump();
  McpRequest req;
  req.body = body;
  req.transport = McpTransport::kStdio;
  req.auth = &no_scopes;
  McpResponse r = server_->Handle(req);
  EXPECT_EQ(r.body["result"]["structuredContent"]["error"], "unauthorized");
  EXPECT_EQ(r.body["result"]["resultType"], "complete");
}

// subscriptions/listen over HTTP: `resources` the listen names; the request points into
// http_body_.
McpRequest ListenRequest(std::string& body, const AuthContext& auth, const json& filter) {
  json params = {{"notifications", filter},
                 {"_meta",
                  {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                   {"io.modelcontextprotocol/clientCapabilities", json::object()}}}};
  body = json{{"jsonrpc", "2.0"}, {"id", 7}, {"method", "subscriptions/listen"}, {"params", params}}
             .dump();
  McpRequest req;
  req.body = body;
  req.transport = McpTransport::kHttp;
  req.auth = &auth;
  req.protocol_version_header = "2026-07-28";
  req.method_header = "subscriptions/listen";
  req.accepts_stream = true;
  return req;
}

TEST_F(McpServerTest, ListenAcknowledgesThenTellsChangesUntilTheTokenIsRevoked) {
  const std::string person = "cortex://counterparties/sam@x.example";
  ASSERT_TRUE(IngestJsonl(*store_, clock_, auth_.workspace_id,
                          R"({"type":"entity","name":"Sam","identifiers":["sam@x.example"]})")
                  .ok());
  auto token = CreateToken(*store_, clock_, "alpha", kScopeRead, "listener");
  ASSERT_TRUE(token.ok()) << token.status().message();
  AuthContext listener{auth_.workspace_id, "alpha", token->record.id, kScopeRead};
  std::string body;
  McpResponse r = server_->Handle(ListenRequest(
      body, listener,
      {{"resourceSubscriptions", {person, "cortex://inbox", person}}, {"toolsListChanged", true}}));
  EXPECT_EQ(r.disposition, Disposition::kReply);
  EXPECT_TRUE(r.body.is_null());
  ASSERT_EQ(r.notifications.size(), 1u);
  const json& ack = r.notifications[0];
  EXPECT_EQ(ack["method"], "notifications/subscriptions/acknowledged");
  EXPECT_EQ(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
  // Duplicates once; no list changes (Cortex's lists change only with a release).
  EXPECT_EQ(ack["params"]["notifications"],
            json({{"resourceSubscriptions", {person, "cortex://inbox"}}}));
  ASSERT_TRUE(McpServer::IsListenStream(r.held_stream));

  // Nothing changed: nothing told, however often it looks.
  std::string state = r.held_stream_state;
  EXPECT_EQ(server_->ListenStreamNext(r.held_stream, state), std::string());
  EXPECT_EQ(server_->ListenStreamNext(r.held_stream, state), std::string());
  // The person changes (through any instance: only the store is read).
  ASSERT_TRUE(IngestJsonl(*store_, clock_, auth_.workspace_id,
                          R"({"type":"entity","name":"Sam","identifiers":["sam@x.example"],)"
                          R"("tags":["vip"]})")
                  .ok());
  auto told = server_->ListenStreamNext(r.held_stream, state);
  ASSERT_TRUE(told.has_value());
  ASSERT_NE(told->find("notifications/resources/updated"), std::string::npos) << *told;
  EXPECT_NE(told->find(person), std::string::npos) << *told;
  EXPECT_NE(told->find(R"("io.modelcontextprotocol/subscriptionId":7)"), std::string::npos)
      << *told;
  EXPECT_EQ(told->find("cortex://inbox"), std::string::npos) << *told;
  EXPECT_EQ(server_->ListenStreamNext(r.held_stream, state), std::string());  // told once

  // A revoked token is told nothing more: the stream ends.
  ASSERT_TRUE(RevokeToken(*store_, clock_, "alpha", token->record.id).ok());
  EXPECT_EQ(server_->ListenStreamNext(r.held_stream, state), std::nullopt);
  // Ended by the server (shutdown): the request's result, tagged like its notifications.
  std::string end = server_->ListenStreamEnd(r.held_stream);
  ASSERT_EQ(end.rfind("event: message\ndata: ", 0), 0u) << end;
  json result = json::parse(end.substr(end.find('{')));
  EXPECT_EQ(result["id"], 7);
  EXPECT_EQ(result["result"]["resultType"], "complete");
  EXPECT_EQ(result["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
  server_->ListenClosed(r.held_stream);
}

TEST_F(McpServerTest, ListenRefusesBadFiltersAndCountsStreams) {
  std::string body;
  auto code = [&](const json& filter) {
    McpResponse r = server_->Handle(ListenRequest(body, auth_, filter));
    return r.body.is_null() ? 0 : r.body["error"].value("code", 0);
  };
  EXPECT_EQ(code(json::array()), rpc::kInvalidParams);
  EXPECT_EQ(code({{"toolsListChanged", "yes"}}), rpc::kInvalidParams);
  EXPECT_EQ(code({{"resourceSubscriptions", "cortex://inbox"}}), rpc::kInvalidParams);
  EXPECT_EQ(code({{"resourceSubscriptions", json::array({1})}}), rpc::kInvalidParams);
  McpResponse unknown = server_->Handle(
      ListenRequest(body, auth_, {{"resourceSubscriptions", json::array({"cortex://nope"})}}));
  EXPECT_EQ(unknown.body["error"]["code"], rpc::kInvalidParams);
  EXPECT_EQ(unknown.body["error"]["data"]["uri"], "cortex://nope");
  json many = json::array();
  for (int i = 0; i < 33; ++i) many.push_back("cortex://decisions/dec_" + std::to_string(i));
  EXPECT_EQ(code({{"resourceSubscriptions", many}}), rpc::kInvalidParams);
  // A client that takes no event stream cannot listen.
  McpRequest json_only = ListenRequest(body, auth_, json::object());
  json_only.accepts_stream = false;
  EXPECT_EQ(server_->Handle(json_only).disposition, Disposition::kRejected);
  // Over stdio the channel is the stream: no Accept to look at.
  McpRequest stdio = ListenRequest(body, auth_, json::object());
  stdio.transport = McpTransport::kStdio;
  stdio.accepts_stream = false;
  McpResponse on_stdio = server_->Handle(stdio);
  EXPECT_TRUE(McpServer::IsListenStream(on_stdio.held_stream));
  server_->ListenClosed(on_stdio.held_stream);

  // Each open stream counts against its workspace until the transport closes it.
  std::vector<std::string> open;
  for (size_t i = 0; i < limits::kMaxListenStreamsPerWorkspace; ++i) {
    McpResponse r = server_->Handle(ListenRequest(body, auth_, json::object()));
    ASSERT_FALSE(r.held_stream.empty());
    open.push_back(r.held_stream);
  }
  McpResponse over = server_->Handle(ListenRequest(body, auth_, json::object()));
  EXPECT_EQ(over.disposition, Disposition::kLimited);
  EXPECT_TRUE(over.held_stream.empty());
  server_->ListenClosed(open.back());
  open.pop_back();
  EXPECT_FALSE(server_->Handle(ListenRequest(body, auth_, json::object())).held_stream.empty());
}

TEST(JsonRpcTest, ParsesAndRefuses) {
  EXPECT_EQ(std::get<rpc::Error>(rpc::Parse("{")).code, rpc::kParseError);
  EXPECT_EQ(std::get<rpc::Error>(rpc::Parse("[]")).code, rpc::kInvalidRequest);
  EXPECT_EQ(std::get<rpc::Error>(rpc::Parse(R"({"jsonrpc":"1.0","id":1,"method":"x"})")).code,
            rpc::kInvalidRequest);
  EXPECT_EQ(std::get<rpc::Error>(rpc::Parse(R"({"jsonrpc":"2.0","id":{},"method":"x"})")).code,
            rpc::kInvalidRequest);
  EXPECT_EQ(
      std::get<rpc::Error>(rpc::Parse(R"({"jsonrpc":"2.0","id":1,"method":"x","params":[]})")).code,
      rpc::kInvalidRequest);
  // A key named twice (in the envelope, or deep in a tool's arguments) is no message.
  for (const char* twice : {R"({"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"})",
                            R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":)"
                            R"("t","arguments":{"to":"a@x","to":"b@x"}}})"}) {
    auto err = std::get<rpc::Error>(rpc::Parse(twice));
    EXPECT_EQ(err.code, rpc::kParseError);
    EXPECT_NE(err.message.find("duplicate key"), std::string::npos) << err.message;
  }
  EXPECT_NE(std::get<rpc::Error>(rpc::Parse(R"({"jsonrpc":"2.0","id":1,"method":"x","params":)"
                                            R"({"arguments":{"to":1,"to":2}}})"))
                .message.find("params.arguments.to"),
            std::string::npos);
  auto note = std::get<rpc::Message>(rpc::Parse(R"({"jsonrpc":"2.0","method":"n"})"));
  EXPECT_TRUE(note.is_notification);
  auto resp = std::get<rpc::Message>(rpc::Parse(R"({"jsonrpc":"2.0","id":1,"result":{}})"));
  EXPECT_TRUE(resp.is_response);
}

// A 2025-11-25 tool that needs input: its request goes to the client on the call's stream,
// the answer is taken only from the session that made the call, once, and the tool runs
// again with it (protocol/mcp_ask.cc).
TEST_F(McpServerTest, SessionCallAsksItsClientMidCallAndRunsAgainWithTheAnswer) {
  ToolDef ask;
  ask.name = "ask_name";
  ask.description = "Asks the user's name";
  ask.input_schema = {{"type", "object"}, {"properties", json::object()}};
  ask.handler = [](ToolContext& ctx, const json&) {
    if (!ctx.input_responses.is_object() || !ctx.input_responses.contains("who")) {
      return ToolReply::InputRequired(
          {{"who", {{"method", "elicitation/create"}, {"params", {{"message", "Name?"}}}}}},
          "state-1");
    }
    EXPECT_EQ(ctx.request_state, "state-1");
    return ToolReply::Ok({{"hello", ctx.input_responses["who"]["content"]["name"]}});
  };
  ASSERT_TRUE(registry_.Add(std::move(ask)).ok());
  std::string sid = Open(McpTransport::kHttp, auth_).new_session_id;
  std::string other = Open(McpTransport::kHttp, auth_).new_session_id;
  auto post = [&](const json& msg, const std::string& session, bool stream) {
    std::string body = msg.dump();
    McpRequest req;
    req.body = body;
    req.transport = McpTransport::kHttp;
    req.auth = &auth_;
    req.session_id = session;
    req.accepts_stream = stream;
    return server_->Handle(req);
  };
  json call = {{"jsonrpc", "2.0"},
               {"id", 7},
               {"method", "tools/call"},
               {"params", {{"name", "ask_name"}, {"arguments", json::object()}}}};

  // Without an event stream there is nowhere to ask: a tool error, nothing held.
  McpResponse json_only = post(call, sid, false);
  EXPECT_TRUE(json_only.held_stream.empty());
  EXPECT_EQ(json_only.body["result"]["structuredContent"]["error"], "client_input_unavailable");

  McpResponse asked = post(call, sid, true);
  ASSERT_FALSE(asked.held_stream.empty());
  ASSERT_TRUE(McpServer::IsHeldStream(asked.held_stream));
  ASSERT_EQ(asked.requests.size(), 1u);
  EXPECT_EQ(asked.requests[0]["method"], "elicitation/create");
  std::string rid = asked.requests[0]["id"];
  EXPECT_EQ(rid.rfind("creq_", 0), 0u);
  std::string state;
  EXPECT_EQ(server_->HeldStreamNext(asked.held_stream, state), std::string());

  json answer = {{"jsonrpc", "2.0"},
                 {"id", rid},
                 {"result", {{"action", "accept"}, {"content", {{"name", "Ann"}}}}}};
  // Another session's response is not taken: still waiting.
  EXPECT_EQ(post(answer, other, false).status, "answer_refused");
  EXPECT_EQ(server_->HeldStreamNext(asked.held_stream, state), std::string());
  // The caller's is, once.
  McpResponse taken = post(answer, sid, false);
  EXPECT_EQ(taken.disposition, Disposition::kAccepted);
  EXPECT_EQ(taken.status, "ok");
  EXPECT_EQ(post(answer, sid, false).status, "answer_refused");
  auto sent = server_->HeldStreamNext(asked.held_stream, state);
  ASSERT_TRUE(sent.has_value());
  EXPECT_NE(sent->find("\"id\":7"), std::string::npos) << *sent;
  EXPECT_NE(sent->find("\"hello\":\"Ann\""), std::string::npos) << *sent;
  EXPECT_FALSE(server_->HeldStreamNext(asked.held_stream, state).has_value());

  // A client that answers with an error ends the call with a tool error saying so.
  McpResponse again = post(call, sid, true);
  std::string rid2 = again.requests[0]["id"];
  post({{"jsonrpc", "2.0"}, {"id", rid2}, {"error", {{"code", -1}, {"message", "user declined"}}}},
       sid, false);
  std::string state2;
  auto refused = server_->HeldStreamNext(again.held_stream, state2);
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->find("client_refused"), std::string::npos) << *refused;
  EXPECT_NE(refused->find("user declined"), std::string::npos) << *refused;

  // A client that does not answer in time: the call ends with a tool error, and a late
  // answer is not taken.
  McpResponse late = post(call, sid, true);
  std::string rid3 = late.requests[0]["id"];
  std::string state3;
  EXPECT_EQ(server_->HeldStreamNext(late.held_stream, state3), std::string());
  clock_.Advance(std::chrono::minutes(11));
  auto expired = server_->HeldStreamNext(late.held_stream, state3);
  ASSERT_TRUE(expired.has_value());
  EXPECT_NE(expired->find("client_did_not_answer"), std::string::npos) << *expired;
  answer["id"] = rid3;
  EXPECT_EQ(post(answer, sid, false).status, "answer_refused");
}

}  // namespace
}  // namespace cortex

namespace cortex {
namespace {

// A long-running tool that reports progress until the client cancels it (or 10 s pass).
ToolDef SlowTool() {
  return ToolDef{
      .name = "slow",
      .title = "Slow",
      .description = "waits to be cancelled",
      .input_schema = {{"type", "object"}},
      .output_schema = nullptr,
      .annotations = nullptr,
      .scope = kScopeRead,
      .long_running = true,
      .handler = [](ToolContext& ctx, const json&) -> ToolReply {
        for (int i = 1; i <= 1000; ++i) {
          if (Cancelled(ctx)) return ToolReply::Error("cancelled", "stopped");
          ReportProgress(ctx, i);
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return ToolReply::Ok({{"status", "success"}});
      },
  };
}

TEST(LongCalls, TheRegistryKnowsThemByNameAndInABody) {
  ToolRegistry registry;
  ASSERT_TRUE(registry.Add(SlowTool()).ok());
  EngineConfig config;
  ToolRegistry cortex;
  ASSERT_TRUE(RegisterCortexTools(cortex, config).ok());
  EXPECT_TRUE(registry.LongRunning("slow"));
  EXPECT_TRUE(cortex.LongRunning("episode.ingest"));
  EXPECT_TRUE(cortex.LongRunning("rule.learn"));
  EXPECT_FALSE(cortex.LongRunning("rule.list"));
  EXPECT_FALSE(cortex.LongRunning("nope"));
  EXPECT_TRUE(cortex.MayNameLongRunning(R"({"params":{"name":"episode.ingest"}})"));
  EXPECT_FALSE(cortex.MayNameLongRunning(R"({"params":{"name":"rule.list"}})"));
  EXPECT_FALSE(cortex.MayNameLongRunning(R"({"params":{"name":"episode.ingestx"}})"));
}

TEST(LongCalls, ProgressGoesLiveAndNotificationsCancelledStopsTheCallUnanswered) {
  testing::TempStore store;
  FixedClock clock{*ParseTime("2026-06-10T09:00:00Z")};
  auto ws = EnsureWorkspace(*store, clock, "alpha");
  ASSERT_TRUE(ws.ok());
  AuthContext auth{ws->id, ws->name, "tok_x", kScopeRead};
  ToolRegistry registry;
  ASSERT_TRUE(registry.Add(SlowTool()).ok());
  McpServer server(registry, *store, clock, ServerInfo{});
  EXPECT_TRUE(server.LongRunningCall(nullptr, R"({"name":"slow"})"));

  std::string body = json{{"jsonrpc", "2.0"},
                          {"id", 9},
                          {"method", "tools/call"},
                          {"params",
                           {{"name", "slow"},
                            {"arguments", json::object()},
                            {"_meta",
                             {{"progressToken", "p"},
                              {"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                              {"io.modelcontextprotocol/clientCapabilities", json::object()}}}}}}
                         .dump();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<json> live;
  McpRequest call;
  call.body = body;
  call.transport = McpTransport::kStdio;
  call.auth = &auth;
  call.live_notify = [&](const json& n) {
    std::lock_guard<std::mutex> lock(mu);
    live.push_back(n);
    cv.notify_all();
  };
  McpResponse res;
  std::thread running([&] { res = server.Handle(call); });
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return live.size() >= 2; }));
  }
  // Another id names nothing; the call's own id stops it.
  for (json id : {json(8), json("9"), json(9)}) {
    std::string cancel = json{{"jsonrpc", "2.0"},
                              {"method", "notifications/cancelled"},
                              {"params", {{"requestId", id}}}}
                             .dump();
    McpRequest note;
    note.body = cancel;
    note.transport = McpTransport::kStdio;
    note.auth = &auth;
    EXPECT_EQ(server.Handle(note).disposition, Disposition::kAccepted);
    if (id != json(9)) std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  running.join();
  EXPECT_TRUE(res.body.is_null()) << res.body.dump();
  EXPECT_EQ(res.status, "cancelled");
  EXPECT_TRUE(res.notifications.empty());
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(live.size(), 5u) << "ids 8 and \"9\" did not stop it";
  for (size_t i = 0; i < live.size(); ++i) {
    EXPECT_EQ(live[i]["method"], "notifications/progress");
    EXPECT_EQ(live[i]["params"]["progressToken"], "p");
    EXPECT_EQ(live[i]["params"]["progress"], static_cast<double>(i + 1));
  }
}

}  // namespace
}  // namespace cortex
