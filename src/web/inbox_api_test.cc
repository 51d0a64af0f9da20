#include "web/inbox_api.h"

#include <gtest/gtest.h>

#include "core/json_text.h"
#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/learning/learning.h"
#include "engines/world/ingest.h"
#include "store/actions.h"
#include "store/ledger.h"
#include "testing/temp_store.h"
#include "tools/cortex_tools.h"

namespace cortex {
namespace {

using nlohmann::json;

// The inbox as a browser meets it, without a socket: sign in through a link, read the state,
// approve with and without the CSRF token, move trust, sign out.
class InboxApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = *EnsureWorkspace(*store_, clock_, "alpha");
    ASSERT_TRUE(
        IngestJsonl(
            *store_, clock_, ws_.id,
            R"({"type":"entity","name":"Sarah Chen","identifiers":["sarah@n.example"],"tags":["vip"]})")
            .ok());
    ASSERT_TRUE(RegisterCortexTools(registry_, config_).ok());
  }

  HttpResponse Send(const std::string& method, const std::string& target,
                    const std::string& body = "", bool with_csrf = true) {
    HttpRequest req;
    req.method = method;
    req.target = target;
    req.body = body;
    if (!cookie_.empty()) req.headers.emplace_back("cookie", "other=1; cortex_inbox=" + cookie_);
    if (with_csrf && !csrf_.empty()) req.headers.emplace_back("x-csrf-token", csrf_);
    RequestLog log;
    return api_.Handle(req, log);
  }

  static std::string Header(const HttpResponse& r, const std::string& name) {
    for (const auto& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return "";
  }

  std::string Link() {
    auto link = CreateSignInLink(*store_, clock_, "alpha", "http://127.0.0.1:8787");
    EXPECT_TRUE(link.ok()) << link.status().ToString();
    return link->url.substr(link->url.find("/inbox/"));
  }

  // Signs in through a fresh link; returns the redirect.
  HttpResponse SignIn() {
    HttpResponse r = Send("GET", Link());
    std::string set = Header(r, "Set-Cookie");
    size_t eq = set.find('='), semi = set.find(';');
    if (r.status == 303) cookie_ = set.substr(eq + 1, semi - eq - 1);
    json state = ParseJson(Send("GET", "/inbox/api/state").body);
    csrf_ = state.value("csrf_token", "");
    return r;
  }

  ActionResult Propose() {
    CommunicateRequest req;
    req.to = "sarah@n.example";
    req.message = "The deck is attached.";
    auto r = ActionEngine(*store_, clock_, config_.actions).Communicate(ws_.id, req);
    EXPECT_TRUE(r.ok());
    return *r;
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-09T14:00:00Z")};
  EngineConfig config_;
  ToolRegistry registry_;
  InboxApi api_{*store_, clock_, config_.actions, registry_};
  Workspace ws_;
  std::string cookie_, csrf_;
};

TEST_F(InboxApiTest, ALinkSignsInOnceAndLeavesNoSecretInTheAddress) {
  std::string link = Link();
  EXPECT_NE(Send("HEAD", link).status, 303);  // a link checker does not spend it
  HttpResponse r = Send("GET", link);
  EXPECT_EQ(r.status, 303);
  EXPECT_EQ(Header(r, "Location"), "/inbox/");
  std::string cookie = Header(r, "Set-Cookie");
  EXPECT_EQ(cookie.rfind("cortex_inbox=", 0), 0u) << cookie;
  for (const char* attr : {"HttpOnly", "SameSite=Strict", "Path=/inbox"}) {
    EXPECT_NE(cookie.find(attr), std::string::npos) << attr << " in " << cookie;
  }
  EXPECT_EQ(cookie.find("Secure"), std::string::npos);  // an http:// link
  // The same link again: refused, and it says why.
  HttpResponse again = Send("GET", link);
  EXPECT_EQ(again.status, 401);
  EXPECT_NE(again.body.find("already used"), std::string::npos) << again.body;
  EXPECT_EQ(Header(again, "Set-Cookie"), "");
  // A made-up link.
  EXPECT_EQ(Send("GET", "/inbox/signin?t=" + std::string(64, 'a')).status, 401);
  EXPECT_EQ(Send("GET", "/inbox/signin").status, 401);
}

TEST_F(InboxApiTest, ALinkExpiresAfterFifteenMinutes) {
  std::string link = Link();
  clock_.Advance(std::chrono::minutes(16));
  HttpResponse r = Send("GET", link);
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(r.body.find("expired"), std::string::npos) << r.body;
  // An https:// link makes a Secure cookie.
  auto secure = CreateSignInLink(*store_, clock_, "alpha", "https://cortex.example");
  ASSERT_TRUE(secure.ok());
  HttpResponse s = Send("GET", secure->url.substr(secure->url.find("/inbox/")));
  EXPECT_NE(Header(s, "Set-Cookie").find("; Secure"), std::string::npos);
  // Links need a plain base URL and a workspace that exists.
  EXPECT_EQ(CreateSignInLink(*store_, clock_, "alpha", "ftp://x").status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(CreateSignInLink(*store_, clock_, "alpha", "http://x/inbox").status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(CreateSignInLink(*store_, clock_, "nobody", "http://x").status().code(),
            Code::kNotFound);
}

TEST_F(InboxApiTest, TheStateShowsThePendingDraftAndWhy) {
  EXPECT_EQ(Send("GET", "/inbox/api/state").status, 401);  // not signed in
  ActionResult proposed = Propose();
  SignIn();
  HttpResponse r = Send("GET", "/inbox/api/state");
  ASSERT_EQ(r.status, 200) << r.body;
  json state = ParseJson(r.body);
  EXPECT_EQ(state["workspace"], "alpha");
  ASSERT_EQ(state["pending"].size(), 1u);
  const json& p = state["pending"][0];
  EXPECT_EQ(p["decision_id"], proposed.decision_id);
  EXPECT_EQ(p["recipient"], "sarah@n.example");
  EXPECT_EQ(p["counterparty"]["name"], "Sarah Chen");
  EXPECT_EQ(p["draft"], "The deck is attached.");
  EXPECT_EQ(p["level"], 1);
  EXPECT_NE(p["why"]["summary"].get<std::string>().find("Held for your approval"),
            std::string::npos);
  ASSERT_EQ(state["people"].size(), 1u);
  EXPECT_EQ(state["people"][0]["trust_level"], 1);
  for (const char* key : {"notifications", "decisions", "rules"}) {
    EXPECT_TRUE(state.contains(key)) << key;
  }
  // The page itself, with its strict policy.
  HttpResponse page = Send("GET", "/inbox/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<html"), std::string::npos);
  EXPECT_NE(Header(page, "Content-Security-Policy").find("default-src 'self'"), std::string::npos);
}

TEST_F(InboxApiTest, ApprovalNeedsTheCsrfTokenAndIsRecordedAsThePersons) {
  ActionResult proposed = Propose();
  SignIn();
  json body = {{"decision_id", proposed.decision_id}, {"message", "Deck attached, thanks!"}};
  HttpResponse forged = Send("POST", "/inbox/api/approve", body.dump(), /*with_csrf=*/false);
  EXPECT_EQ(forged.status, 403);
  EXPECT_EQ(ParseJson(forged.body)["error"], "csrf");
  HttpResponse wrong = [&] {
    std::string keep = csrf_;
    csrf_ = std::string(32, '0');
    HttpResponse r = Send("POST", "/inbox/api/approve", body.dump());
    csrf_ = keep;
    return r;
  }();
  EXPECT_EQ(wrong.status, 403);
  // Nothing changed.
  json state = ParseJson(Send("GET", "/inbox/api/state").body);
  EXPECT_EQ(state["pending"].size(), 1u);

  HttpResponse ok = Send("POST", "/inbox/api/approve", body.dump());
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ParseJson(ok.body)["status"], "success");
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    auto a = tx.actions().Get(ws_.id, proposed.action_id);
                    EXPECT_EQ(Name(a->status), "executed");
                    EXPECT_EQ(a->draft, "Deck attached, thanks!");
                    auto entries = *tx.ledger().ListForAction(ws_.id, proposed.action_id);
                    EXPECT_EQ(Name(entries.at(1).event), "approved");
                    EXPECT_EQ(entries.at(1).detail["by"]["channel"], "web");
                    EXPECT_EQ(
                        entries.at(1).detail["by"]["session"].get<std::string>().rfind("ses_", 0),
                        0u);
                    return Status::Ok();
                  })
                  .ok());
  // Twice: not pending any more, and it says so.
  HttpResponse twice = Send("POST", "/inbox/api/approve", body.dump());
  EXPECT_EQ(twice.status, 409);
  EXPECT_EQ(ParseJson(twice.body)["error"], "not_pending");
  // Bad input: a clear error.
  EXPECT_EQ(Send("POST", "/inbox/api/reject", R"({"decision_id": 7})").status, 400);
  EXPECT_EQ(Send("POST", "/inbox/api/reject", "not json").status, 400);
}

TEST_F(InboxApiTest, APersonMovesTrustAndSignsOut) {
  SignIn();
  json state = ParseJson(Send("GET", "/inbox/api/state").body);
  std::string sarah = state["people"][0]["entity_id"];
  HttpResponse r =
      Send("POST", "/inbox/api/trust", json{{"entity_id", sarah}, {"level", 2}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  state = ParseJson(Send("GET", "/inbox/api/state").body);
  EXPECT_EQ(state["people"][0]["trust_level"], 2);
  EXPECT_EQ(state["people"][0]["trust_source"], "entity");
  EXPECT_EQ(state["decisions"][0]["decision_class"], "trust_transition");
  EXPECT_EQ(
      Send("POST", "/inbox/api/trust", json{{"entity_id", sarah}, {"level", 9}}.dump()).status,
      400);
  EXPECT_EQ(Send("POST", "/inbox/api/trust",
                 json{{"entity_id", "entity_01M8PS06M053VVFGPPNAWWM0AA"}, {"level", 1}}.dump())
                .status,
            404);

  HttpResponse out = Send("POST", "/inbox/api/signout", "{}");
  EXPECT_EQ(out.status, 200);
  EXPECT_NE(Header(out, "Set-Cookie").find("Max-Age=0"), std::string::npos);
  EXPECT_EQ(Send("GET", "/inbox/api/state").status, 401);
  EXPECT_EQ(
      Send("POST", "/inbox/api/trust", json{{"entity_id", sarah}, {"level", 3}}.dump()).status,
      401);
}

TEST_F(InboxApiTest, APersonAcceptsOrRejectsALearnedRule) {
  // Four messages from Sam, each answered within ten minutes: a proposal.
  std::string lines;
  for (int d = 1; d <= 4; ++d) {
    std::string day = "2026-06-0" + std::to_string(d + 3);
    lines +=
        R"({"type":"episode","kind":"message_received","occurred_at":")" + day +
        R"(T10:00:00Z","counterparty":"sam@x.example","subject":"Q","summary":"Q","thread":"t)" +
        std::to_string(d) + "\"}\n";
    lines +=
        R"({"type":"episode","kind":"message_sent","occurred_at":")" + day +
        R"(T10:10:00Z","counterparty":"sam@x.example","subject":"A","summary":"A","thread":"t)" +
        std::to_string(d) + "\"}\n";
  }
  ASSERT_TRUE(IngestJsonl(*store_, clock_, ws_.id, lines).ok());
  auto learned = Learn(*store_, clock_, ws_.id, {});
  ASSERT_TRUE(learned.ok());
  ASSERT_EQ(learned->proposed, 1);
  SignIn();
  json state = ParseJson(Send("GET", "/inbox/api/state").body);
  ASSERT_EQ(state["rules"].size(), 1u) << state["rules"].dump();
  EXPECT_EQ(state["rules"][0]["status"], "proposed");
  EXPECT_EQ(state["rules"][0]["origin"], "learned");
  std::string id = state["rules"][0]["rule_id"];
  // Without the CSRF token, or with bad input: refused, nothing changes.
  EXPECT_EQ(Send("POST", "/inbox/api/rule", json{{"rule_id", id}, {"decision", "accept"}}.dump(),
                 /*with_csrf=*/false)
                .status,
            403);
  EXPECT_EQ(
      Send("POST", "/inbox/api/rule", json{{"rule_id", id}, {"decision", "maybe"}}.dump()).status,
      400);
  EXPECT_EQ(
      Send("POST", "/inbox/api/rule", json{{"rule_id", 7}, {"decision", "accept"}}.dump()).status,
      400);
  EXPECT_EQ(Send("POST", "/inbox/api/rule",
                 json{{"rule_id", "rul_01M8PS06M053VVFGPPNAWWM0AA"}, {"decision", "accept"}}.dump())
                .status,
            404);
  state = ParseJson(Send("GET", "/inbox/api/state").body);
  EXPECT_EQ(state["rules"][0]["status"], "proposed");
  HttpResponse r =
      Send("POST", "/inbox/api/rule", json{{"rule_id", id}, {"decision", "accept"}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(ParseJson(r.body)["status"], "active");
  state = ParseJson(Send("GET", "/inbox/api/state").body);
  EXPECT_EQ(state["rules"][0]["status"], "active");
  EXPECT_EQ(
      Send("POST", "/inbox/api/rule", json{{"rule_id", id}, {"decision", "accept"}}.dump()).status,
      409);
  r = Send("POST", "/inbox/api/rule", json{{"rule_id", id}, {"decision", "reject"}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  state = ParseJson(Send("GET", "/inbox/api/state").body);
  EXPECT_TRUE(state["rules"].empty()) << "a rejected rule is neither in force nor proposed";
}

TEST_F(InboxApiTest, TheEventStreamSaysWhenSomethingChangedAndEndsWithTheSession) {
  SignIn();
  HttpResponse open = Send("GET", "/inbox/api/events");
  ASSERT_TRUE(open.open_stream);
  std::string marker = open.stream_state;  // where things stood as it opened
  EXPECT_FALSE(marker.empty());
  // A change before the first poll is not lost.
  Propose();
  auto first = api_.Poll(cookie_, marker);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->rfind("event: changed\ndata: ", 0), 0u) << *first;
  EXPECT_EQ(*api_.Poll(cookie_, marker), "");
  Propose();
  auto changed = api_.Poll(cookie_, marker);
  ASSERT_TRUE(changed.has_value());
  EXPECT_EQ(changed->rfind("event: changed\ndata: ", 0), 0u) << *changed;
  EXPECT_EQ(*api_.Poll(cookie_, marker), "");
  clock_.Advance(std::chrono::hours(13));  // past the session's 12 hours
  EXPECT_FALSE(api_.Poll(cookie_, marker).has_value());
}

}  // namespace
}  // namespace cortex
