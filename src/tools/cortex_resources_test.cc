// Resources, prompts and completions on the demo workspace, through the protocol layer as a
// client sees them, in both eras.
#include <gtest/gtest.h>

#include "core/time.h"
#include "engines/actions/actions.h"
#include "engines/triage/rules.h"
#include "engines/world/demo_world.h"
#include "engines/world/ingest.h"
#include "protocol/jsonrpc.h"
#include "protocol/mcp_server.h"
#include "store/decisions.h"
#include "testing/temp_store.h"
#include "tools/cortex_tools.h"

namespace cortex {
namespace {

using nlohmann::json;

class CortexResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterCortexTools(registry_, config_).ok());
    registry_.set_check_output(true);
    ws_ = *EnsureWorkspace(*store_, clock_, "demo");
    ASSERT_TRUE(IngestJsonl(*store_, clock_, ws_.id, DemoWorldJsonl()).ok());
    ASSERT_TRUE(ImportRules(*store_, clock_, ws_.id, DemoRulesYaml()).ok());
    ASSERT_TRUE(IngestJsonl(*store_, clock_, ws_.id, DemoWeekJsonl()).ok());
    auth_ = AuthContext{ws_.id, ws_.name, "tok", kScopeRead};
    other_ws_ = *EnsureWorkspace(*store_, clock_, "other");
    other_ = AuthContext{other_ws_.id, other_ws_.name, "tok2", kScopeRead};
    server_ = std::make_unique<McpServer>(registry_, *store_, clock_, ServerInfo{});
    session_ = Open(auth_);
  }

  std::string Open(const AuthContext& auth) {
    McpResponse r = Handle(json{{"jsonrpc", "2.0"},
                                {"id", 1},
                                {"method", "initialize"},
                                {"params",
                                 {{"protocolVersion", "2025-11-25"},
                                  {"capabilities", json::object()},
                                  {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}},
                           auth, std::nullopt);
    EXPECT_FALSE(r.new_session_id.empty());
    return r.new_session_id;
  }

  McpResponse Handle(const json& msg, const AuthContext& auth, std::optional<std::string> session) {
    std::string body = msg.dump();
    McpRequest req;
    req.body = body;
    req.transport = McpTransport::kHttp;
    req.auth = &auth;
    req.session_id = session;
    if (msg["params"].contains("_meta")) {  // 2026-07-28: the headers mirror the body
      req.protocol_version_header = "2026-07-28";
      req.method_header = msg["method"];
      if (msg["params"].contains("uri")) req.name_header = msg["params"]["uri"];
      if (msg["params"].contains("name")) req.name_header = msg["params"]["name"];
    }
    return server_->Handle(req);
  }

  // A 2025-11-25 request in the demo workspace's session: its response body.
  json Legacy(const std::string& method, json params = json::object()) {
    return Handle({{"jsonrpc", "2.0"}, {"id", 7}, {"method", method}, {"params", params}}, auth_,
                  session_)
        .body;
  }
  // A 2026-07-28 request: its response body.
  json Modern(const std::string& method, json params = json::object(),
              const AuthContext* auth = nullptr) {
    params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                       {"io.modelcontextprotocol/clientCapabilities", json::object()}};
    return Handle({{"jsonrpc", "2.0"}, {"id", 8}, {"method", method}, {"params", params}},
                  auth ? *auth : auth_, std::nullopt)
        .body;
  }

  // The JSON text of the first content of a resources/read response.
  static json ReadBody(const json& response) {
    const json& c = response.at("result").at("contents").at(0);
    EXPECT_EQ(c["mimeType"], "application/json");
    return json::parse(c["text"].get<std::string>());
  }

  std::string ATriageDecision() {
    std::string id;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      DecisionFilter f;
                      f.decision_class = DecisionClass::kTriage;
                      id = tx.decisions().List(ws_.id, f, 1)->at(0).id;
                      return Status::Ok();
                    })
                    .ok());
    return id;
  }

  ActionResult Draft(const std::string& to, const std::string& message) {
    CommunicateRequest r;
    r.to = to;
    r.message = message;
    auto sent = ActionEngine(*store_, clock_, config_.actions).Communicate(ws_.id, r);
    EXPECT_TRUE(sent.ok()) << sent.status().ToString();
    return *sent;
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-11-24T10:20:00Z")};
  EngineConfig config_;
  ToolRegistry registry_;
  Workspace ws_, other_ws_;
  AuthContext auth_, other_;
  std::unique_ptr<McpServer> server_;
  std::string session_;
};

TEST_F(CortexResourcesTest, CapabilitiesNameResourcesPromptsCompletionsAndLogging) {
  McpResponse init = Handle({{"jsonrpc", "2.0"},
                             {"id", 1},
                             {"method", "initialize"},
                             {"params",
                              {{"protocolVersion", "2025-11-25"},
                               {"capabilities", json::object()},
                               {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}},
                            auth_, std::nullopt);
  const json& caps = init.body["result"]["capabilities"];
  // Over HTTP a session's GET stream carries resource updates (stdio has none).
  EXPECT_EQ(caps["resources"], (json{{"subscribe", true}, {"listChanged", false}}));
  EXPECT_EQ(caps["prompts"], (json{{"listChanged", false}}));
  EXPECT_TRUE(caps["completions"].is_object());
  EXPECT_TRUE(caps["logging"].is_object());
  json discovered = Modern("server/discover");
  EXPECT_EQ(discovered["result"]["capabilities"]["prompts"], caps["prompts"]);
  EXPECT_TRUE(discovered["result"]["capabilities"]["completions"].is_object());
}

TEST_F(CortexResourcesTest, ListsResourcesTemplatesAndPromptsInBothEras) {
  json legacy = Legacy("resources/list")["result"];
  ASSERT_EQ(legacy["resources"].size(), 5u);
  EXPECT_EQ(legacy["resources"][0]["uri"], "cortex://inbox");
  EXPECT_EQ(legacy["resources"][0]["mimeType"], "application/json");
  EXPECT_FALSE(legacy.contains("ttlMs"));
  json modern = Modern("resources/list")["result"];
  EXPECT_EQ(modern["resources"], legacy["resources"]);
  EXPECT_EQ(modern["cacheScope"], "public");
  EXPECT_EQ(modern["resultType"], "complete");
  json templates = Legacy("resources/templates/list")["result"]["resourceTemplates"];
  ASSERT_EQ(templates.size(), 5u);
  EXPECT_EQ(templates[0]["uriTemplate"], "cortex://decisions/{decision_id}");
  EXPECT_EQ(templates[4]["uriTemplate"], "cortex://rules/{rule}");
  json prompts = Modern("prompts/list")["result"]["prompts"];
  ASSERT_EQ(prompts.size(), 3u);
  EXPECT_EQ(prompts[2]["name"], "why_did_you_do_that");
  EXPECT_EQ(prompts[2]["arguments"][0], (json{{"name", "decision_id"},
                                              {"description", "The decision (dec_...)."},
                                              {"required", true}}));
  EXPECT_EQ(Legacy("resources/list", {{"cursor", "x"}})["error"]["code"], rpc::kInvalidParams);
}

TEST_F(CortexResourcesTest, ReadsRealDataScopedToTheWorkspace) {
  ActionResult draft = Draft("sarah.chen@northwind.example", "Can we move the review to 3pm?");
  ASSERT_EQ(draft.outcome, ActionOutcome::kPendingApproval);
  json inbox = ReadBody(Legacy("resources/read", {{"uri", "cortex://inbox"}}));
  ASSERT_EQ(inbox["pending"].size(), 1u);
  EXPECT_EQ(inbox["pending"][0]["decision_id"], draft.decision_id);
  EXPECT_EQ(inbox["pending"][0]["counterparty"]["name"], "Sarah Chen");
  EXPECT_EQ(inbox["pending"][0]["message"], "Can we move the review to 3pm?");
  // Another workspace's inbox is its own (empty), and this workspace's decision is not found.
  json theirs = Modern("resources/read", {{"uri", "cortex://inbox"}}, &other_);
  EXPECT_EQ(ReadBody(theirs)["pending"].size(), 0u);
  EXPECT_EQ(theirs["result"]["cacheScope"], "private");
  EXPECT_EQ(theirs["result"]["ttlMs"], 0);
  std::string uri = "cortex://decisions/" + draft.decision_id;
  json mine = ReadBody(Modern("resources/read", {{"uri", uri}}));
  EXPECT_EQ(mine["decision_class"], "action_proposed");
  EXPECT_EQ(mine["status"], "pending");
  json not_theirs = Modern("resources/read", {{"uri", uri}}, &other_);
  EXPECT_EQ(not_theirs["error"]["code"], rpc::kInvalidParams);
  EXPECT_EQ(not_theirs["error"]["data"]["uri"], uri);

  // As of Tue 24 Nov 10:20 Sarah's 10:15 message waits for the 11:00 transition.
  json next =
      ReadBody(Legacy("resources/read", {{"uri", "cortex://notifications/next-transition"}}));
  EXPECT_EQ(next["next_transition"]["at"], "2026-11-24T11:00:00Z");
  json digest = ReadBody(Legacy("resources/read", {{"uri", "cortex://digest"}}));
  EXPECT_EQ(digest["digest"]["at"], "2026-11-24T17:00:00Z");
  json due = ReadBody(Legacy("resources/read", {{"uri", "cortex://notifications/due"}}));
  EXPECT_TRUE(due["due"].is_array());
  json rules = ReadBody(Legacy("resources/read", {{"uri", "cortex://rules"}}));
  ASSERT_FALSE(rules["rules"].empty());
  EXPECT_FALSE(rules["rules"][0]["summary"].get<std::string>().empty());
  json sarah = ReadBody(
      Legacy("resources/read", {{"uri", "cortex://counterparties/sarah.chen@northwind.example"}}));
  EXPECT_EQ(sarah["name"], "Sarah Chen");
  json held =
      ReadBody(Legacy("resources/read", {{"uri", "cortex://triage/surface_at_transition"}}));
  ASSERT_FALSE(held["decisions"].empty());
  EXPECT_EQ(held["decisions"][0]["triage_class"], "surface_at_transition");
}

TEST_F(CortexResourcesTest, UnknownResourcesGetEachErasNotFound) {
  for (const char* uri :
       {"cortex://decisions/dec_01JAAAAAAAAAAAAAAAAAAAAAAA", "cortex://nope",
        "cortex://decisions/not-an-id", "cortex://decisions/a/b",
        "cortex://counterparties/nobody@x.example", "cortex://triage/sometimes"}) {
    json legacy = Legacy("resources/read", {{"uri", uri}});
    EXPECT_EQ(legacy["error"]["code"], -32002) << uri << legacy.dump();
    EXPECT_EQ(legacy["error"]["message"], "Resource not found");
    EXPECT_EQ(legacy["error"]["data"]["uri"], uri);
    EXPECT_EQ(Modern("resources/read", {{"uri", uri}})["error"]["code"], rpc::kInvalidParams)
        << uri;
  }
  EXPECT_EQ(Legacy("resources/read", json::object())["error"]["code"], rpc::kInvalidParams);
}

TEST_F(CortexResourcesTest, PromptsCarryTheData) {
  ActionResult draft = Draft("sarah.chen@northwind.example", "Lunch on Thursday?");
  json briefing = Legacy("prompts/get", {{"name", "morning_briefing"}})["result"];
  ASSERT_EQ(briefing["messages"].size(), 5u);
  EXPECT_EQ(briefing["messages"][0]["content"]["type"], "text");
  const json& inbox = briefing["messages"][2]["content"]["resource"];
  EXPECT_EQ(inbox["uri"], "cortex://inbox");
  EXPECT_NE(inbox["text"].get<std::string>().find("Lunch on Thursday?"), std::string::npos);

  json review =
      Modern("prompts/get", {{"name", "review_approvals"},
                             {"arguments", {{"counterparty", "sarah.chen@northwind.example"}}}});
  EXPECT_NE(review["result"]["messages"][0]["content"]["text"].get<std::string>().find(
                "1 draft waiting for my approval to Sarah Chen"),
            std::string::npos)
      << review.dump();
  json nobody = Modern("prompts/get", {{"name", "review_approvals"},
                                       {"arguments", {{"counterparty", "nobody@x.example"}}}});
  EXPECT_EQ(nobody["error"]["code"], rpc::kInvalidParams);

  json why = Legacy("prompts/get", {{"name", "why_did_you_do_that"},
                                    {"arguments", {{"decision_id", draft.decision_id}}}});
  const json& embedded = why["result"]["messages"][1]["content"]["resource"];
  EXPECT_EQ(embedded["uri"], "cortex://decisions/" + draft.decision_id);
  EXPECT_EQ(json::parse(embedded["text"].get<std::string>())["decision_id"], draft.decision_id);

  // Bad input: a clear error, per argument.
  EXPECT_EQ(Legacy("prompts/get", {{"name", "why_did_you_do_that"}})["error"]["message"],
            "Invalid params: argument 'decision_id' is required");
  EXPECT_EQ(Legacy("prompts/get", {{"name", "why_did_you_do_that"},
                                   {"arguments", {{"decision_id", 5}}}})["error"]["code"],
            rpc::kInvalidParams);
  EXPECT_EQ(Legacy("prompts/get", {{"name", "no_such_prompt"}})["error"]["code"],
            rpc::kInvalidParams);
  json elsewhere =
      Modern("prompts/get",
             {{"name", "why_did_you_do_that"}, {"arguments", {{"decision_id", draft.decision_id}}}},
             &other_);
  EXPECT_EQ(elsewhere["error"]["code"], rpc::kInvalidParams);
}

TEST_F(CortexResourcesTest, CompletesIdsCounterpartiesAndClasses) {
  auto complete = [&](json ref, const std::string& arg, const std::string& value) {
    json r = Legacy("completion/complete",
                    {{"ref", ref}, {"argument", {{"name", arg}, {"value", value}}}});
    EXPECT_TRUE(r.contains("result")) << r.dump();
    return r["result"]["completion"];
  };
  json tmpl = {{"type", "ref/resource"}, {"uri", "cortex://triage/{triage_class}"}};
  EXPECT_EQ(complete(tmpl, "triage_class", "s")["values"], (json{"surface_at_transition"}));
  EXPECT_EQ(complete(tmpl, "triage_class", "")["total"], 4);

  std::string id = ATriageDecision();
  json prompt = {{"type", "ref/prompt"}, {"name", "why_did_you_do_that"}};
  json ids = complete(prompt, "decision_id", id.substr(0, 20));
  bool found = false;
  for (const auto& v : ids["values"]) found |= v == id;
  EXPECT_TRUE(found) << ids.dump();
  for (const auto& v : ids["values"])
    EXPECT_EQ(v.get<std::string>().rfind(id.substr(0, 20), 0), 0u);
  EXPECT_EQ(complete(prompt, "decision_id", "dec_ZZZZ")["values"], json::array());

  json people =
      complete({{"type", "ref/prompt"}, {"name", "review_approvals"}}, "counterparty", "chen");
  EXPECT_EQ(people["values"][0], "sarah.chen@northwind.example") << people.dump();
  json ntf =
      complete({{"type", "ref/resource"}, {"uri", "cortex://notifications/{notification_id}"}},
               "notification_id", "ntf_");
  EXPECT_FALSE(ntf["values"].empty());

  // Rule names, of the rules in force; a named rule reads as one resource.
  json rule_tmpl = {{"type", "ref/resource"}, {"uri", "cortex://rules/{rule}"}};
  json rules = complete(rule_tmpl, "rule", "vip-");
  EXPECT_EQ(rules["values"], (json{"vip-at-break", "vip-urgent-interrupts"})) << rules.dump();
  EXPECT_EQ(complete(rule_tmpl, "rule", "zzz")["values"], json::array());
  json one = ReadBody(Legacy("resources/read", {{"uri", "cortex://rules/vip-urgent-interrupts"}}));
  EXPECT_EQ(one["rule"]["name"], "vip-urgent-interrupts") << one.dump();
  EXPECT_EQ(one["rule"]["status"], "active");
  std::string rule_id = one["rule"]["rule_id"];
  EXPECT_EQ(
      ReadBody(Legacy("resources/read", {{"uri", "cortex://rules/" + rule_id}}))["rule"]["name"],
      "vip-urgent-interrupts");
  EXPECT_EQ(Legacy("resources/read", {{"uri", "cortex://rules/nope"}})["error"]["code"], -32002);
  // Not another workspace's rules, by name or by id.
  EXPECT_EQ(
      Modern("resources/read", {{"uri", "cortex://rules/" + rule_id}}, &other_)["error"]["code"],
      rpc::kInvalidParams);
  EXPECT_EQ(Modern("completion/complete",
                   {{"ref", rule_tmpl}, {"argument", {{"name", "rule"}, {"value", ""}}}},
                   &other_)["result"]["completion"]["values"],
            json::array());

  // Another workspace completes from its own data only.
  json theirs = Modern(
      "completion/complete",
      {{"ref", prompt}, {"argument", {{"name", "decision_id"}, {"value", "dec_"}}}}, &other_);
  EXPECT_EQ(theirs["result"]["completion"]["values"], json::array());
  // Unknown references and arguments are refused.
  EXPECT_EQ(Legacy("completion/complete",
                   {{"ref", {{"type", "ref/prompt"}, {"name", "nope"}}},
                    {"argument", {{"name", "x"}, {"value", ""}}}})["error"]["code"],
            rpc::kInvalidParams);
  EXPECT_EQ(
      Legacy("completion/complete",
             {{"ref", prompt}, {"argument", {{"name", "x"}, {"value", ""}}}})["error"]["code"],
      rpc::kInvalidParams);
}

TEST_F(CortexResourcesTest, ASubscribedSessionIsToldWhenTheInboxChanges) {
  EXPECT_EQ(Legacy("resources/subscribe", {{"uri", "cortex://inbox"}})["result"], json::object());
  EXPECT_EQ(Legacy("resources/subscribe", {{"uri", "cortex://notifications/due"}})["result"],
            json::object());
  EXPECT_EQ(Legacy("resources/subscribe", {{"uri", "cortex://nope"}})["error"]["code"], -32002);
  std::string state;
  auto first = server_->SessionStreamNext(session_, state);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, "");  // the first look only remembers what is there
  EXPECT_EQ(*server_->SessionStreamNext(session_, state), "");  // nothing changed
  Draft("sarah.chen@northwind.example", "Are we still on for Friday?");
  std::string told = *server_->SessionStreamNext(session_, state);
  EXPECT_NE(told.find(R"("method":"notifications/resources/updated")"), std::string::npos);
  EXPECT_NE(told.find(R"("uri":"cortex://inbox")"), std::string::npos) << told;
  EXPECT_EQ(told.find("notifications/due"), std::string::npos) << told;
  EXPECT_EQ(*server_->SessionStreamNext(session_, state), "");
  // Unsubscribed: the next draft is not told.
  EXPECT_EQ(Legacy("resources/unsubscribe", {{"uri", "cortex://inbox"}})["result"], json::object());
  Draft("sarah.chen@northwind.example", "And Monday?");
  EXPECT_EQ(*server_->SessionStreamNext(session_, state), "");
  // Another workspace's session with the same subscription sees its own (empty) inbox.
  std::string theirs = Open(other_);
  McpResponse sub = Handle({{"jsonrpc", "2.0"},
                            {"id", 3},
                            {"method", "resources/subscribe"},
                            {"params", {{"uri", "cortex://inbox"}}}},
                           other_, theirs);
  EXPECT_EQ(sub.body["result"], json::object());
  std::string their_state;
  server_->SessionStreamNext(theirs, their_state);
  Draft("sarah.chen@northwind.example", "Tuesday then?");
  EXPECT_EQ(*server_->SessionStreamNext(theirs, their_state), "");
  // A session that ends ends its stream.
  EXPECT_TRUE(*server_->EndSession(session_, auth_));
  EXPECT_FALSE(server_->SessionStreamNext(session_, state).has_value());
}

TEST_F(CortexResourcesTest, ASubscribedSessionIsToldWhenAnInterruptArrives) {
  EXPECT_EQ(Legacy("resources/subscribe", {{"uri", "cortex://notifications/due"}})["result"],
            json::object());
  std::string state;
  EXPECT_EQ(*server_->SessionStreamNext(session_, state), "");
  // Tuesday 24 Nov, 10:19: Marcus on a Tuesday is interrupt_now (rule marcus-tuesdays).
  ASSERT_TRUE(
      IngestJsonl(
          *store_, clock_, ws_.id,
          R"({"type":"episode","kind":"message_received","occurred_at":"2026-11-24T10:19:00Z","counterparty":"marcus.webb@harborline.example","summary":"Marcus: 'Did the build ship?'","external_id":"sub-1"})")
          .ok());
  json due = ReadBody(Legacy("resources/read", {{"uri", "cortex://notifications/due"}}));
  ASSERT_FALSE(due["due"].empty());
  EXPECT_EQ(due["due"][0]["triage_class"], "interrupt_now") << due.dump();
  std::string told = *server_->SessionStreamNext(session_, state);
  EXPECT_NE(told.find(R"("uri":"cortex://notifications/due")"), std::string::npos) << told;
}

TEST_F(CortexResourcesTest, SetLevelIsCheckedAndKeptWithTheSession) {
  EXPECT_EQ(Legacy("logging/setLevel", {{"level", "warning"}})["result"], json::object());
  EXPECT_EQ(Legacy("logging/setLevel", {{"level", "loud"}})["error"]["code"], rpc::kInvalidParams);
  McpSession s;
  ASSERT_TRUE(*server_->SessionExists(session_, auth_, &s));
  EXPECT_EQ(s.log_level, "warning");
  // 2026-07-28 has no setLevel: the level comes with each request.
  EXPECT_EQ(Modern("logging/setLevel", {{"level", "info"}})["error"]["code"], rpc::kMethodNotFound);
}

}  // namespace
}  // namespace cortex

namespace cortex {
namespace {

// The protocol layer's 2026-07-28 rules the 0.2 conformance suite checks (server-stateless,
// input-required results), on a registry of test tools.
class StatelessRulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ToolDef needs_sampling;
    needs_sampling.name = "needs_sampling";
    needs_sampling.input_schema = {{"type", "object"}};
    needs_sampling.required_client_capabilities = {"sampling"};
    needs_sampling.handler = [](ToolContext&, const json&) {
      return ToolReply::Ok({{"ok", true}});
    };
    ASSERT_TRUE(registry_.Add(std::move(needs_sampling)).ok());
    ToolDef picky;  // refuses any requestState
    picky.name = "picky";
    picky.input_schema = {{"type", "object"}};
    picky.handler = [](ToolContext& ctx, const json&) {
      if (!ctx.request_state.empty()) return ToolReply::InvalidParams("bad state");
      return ToolReply::Ok({{"ok", true}});
    };
    ASSERT_TRUE(registry_.Add(std::move(picky)).ok());
    auto ws = EnsureWorkspace(*store_, clock_, "alpha");
    auth_ = AuthContext{ws->id, ws->name, "tok", kScopeRead};
    server_ = std::make_unique<McpServer>(registry_, *store_, clock_, ServerInfo{});
  }

  McpResponse Send(const std::string& method, json params, json caps = json::object(),
                   std::string header_version = "2026-07-28",
                   std::string body_version = "2026-07-28") {
    params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", body_version},
                       {"io.modelcontextprotocol/clientCapabilities", caps}};
    body_ = json{{"jsonrpc", "2.0"}, {"id", 9}, {"method", method}, {"params", params}}.dump();
    McpRequest req;
    req.body = body_;
    req.transport = McpTransport::kHttp;
    req.auth = &auth_;
    req.protocol_version_header = header_version;
    req.method_header = method;
    if (params.contains("name")) req.name_header = params["name"];
    return server_->Handle(req);
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-10T09:00:00Z")};
  ToolRegistry registry_;
  AuthContext auth_;
  std::unique_ptr<McpServer> server_;
  std::string body_;
};

TEST_F(StatelessRulesTest, AHeaderContradictingTheBodyIsAMismatchBeforeAnUnknownVersion) {
  McpResponse r = Send("server/discover", json::object(), json::object(), "2026-07-28", "v999");
  EXPECT_EQ(r.disposition, Disposition::kRejected);
  EXPECT_EQ(r.body["error"]["code"], rpc::kHeaderMismatch);
  McpResponse both = Send("server/discover", json::object(), json::object(), "v999", "v999");
  EXPECT_EQ(both.body["error"]["code"], rpc::kUnsupportedProtocolVersion);
}

TEST_F(StatelessRulesTest, InitializeIsARemovedMethodInTheStatelessEra) {
  McpResponse r = Send("initialize", json::object());
  EXPECT_EQ(r.disposition, Disposition::kUnknownMethod);
  EXPECT_EQ(r.body["error"]["code"], rpc::kMethodNotFound);
  EXPECT_TRUE(r.new_session_id.empty());
}

TEST_F(StatelessRulesTest, AToolNeedingAnUndeclaredCapabilityIsRefused) {
  McpResponse r = Send("tools/call", {{"name", "needs_sampling"}, {"arguments", json::object()}});
  EXPECT_EQ(r.disposition, Disposition::kRejected);
  EXPECT_EQ(r.body["error"]["code"], rpc::kMissingRequiredClientCapability);
  EXPECT_EQ(r.body["error"]["data"]["requiredCapabilities"], (json{{"sampling", json::object()}}));
  McpResponse ok = Send("tools/call", {{"name", "needs_sampling"}, {"arguments", json::object()}},
                        {{"sampling", json::object()}});
  EXPECT_EQ(ok.body["result"]["structuredContent"]["ok"], true);
}

TEST_F(StatelessRulesTest, BadStateAndMalformedInputResponsesAreInvalidParams) {
  McpResponse state = Send(
      "tools/call", {{"name", "picky"}, {"arguments", json::object()}, {"requestState", "forged"}});
  EXPECT_EQ(state.body["error"]["code"], rpc::kInvalidParams);
  EXPECT_EQ(state.body["error"]["message"], "Invalid params: bad state");
  McpResponse responses =
      Send("tools/call", {{"name", "picky"}, {"arguments", json::object()}, {"inputResponses", 5}});
  EXPECT_EQ(responses.body["error"]["code"], rpc::kInvalidParams);
}

}  // namespace
}  // namespace cortex
