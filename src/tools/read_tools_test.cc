// The read tools on the demo workspace, called through the registry as a client would.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "cli/commands.h"
#include "core/ids.h"
#include "core/time.h"
#include "engines/actions/actions.h"
#include "engines/auth/tokens.h"
#include "engines/triage/rules.h"
#include "engines/world/demo_world.h"
#include "engines/world/identifiers.h"
#include "engines/world/ingest.h"
#include "store/decisions.h"
#include "store/episodes.h"
#include "store/notifications.h"
#include "testing/temp_store.h"
#include "tools/cortex_tools.h"

namespace cortex {
namespace {

using nlohmann::json;

class ReadToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterCortexTools(registry_, config_).ok());
    registry_.set_check_output(true);
    ws_ = *EnsureWorkspace(*store_, clock_, "demo");
    ASSERT_TRUE(IngestJsonl(*store_, clock_, ws_.id, DemoWorldJsonl()).ok());
    auto rules = ImportRules(*store_, clock_, ws_.id, DemoRulesYaml());
    ASSERT_TRUE(rules.ok()) << rules.status().ToString();
    auto week = IngestJsonl(*store_, clock_, ws_.id, DemoWeekJsonl());
    ASSERT_TRUE(week.ok()) << week.status().ToString();
    auth_ = AuthContext{ws_.id, ws_.name, "tok", kScopeRead};
  }

  json Call(const std::string& tool, const json& args, bool expect_error = false) {
    ToolContext ctx{auth_, *store_, clock_, "trc_test", nullptr, [](json) {}};
    ToolReply r = registry_.Call(tool, args, ctx);
    EXPECT_EQ(r.is_error(), expect_error)
        << tool << " " << args.dump() << " -> " << r.body().dump();
    return r.body();
  }

  // The notification of the demo week's message with this external id.
  std::string NotificationFor(const std::string& external_id) {
    std::string id;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      auto ep = tx.episodes().FindByExternalId(ws_.id, external_id);
                      if (!ep.ok()) return ep.status();
                      DecisionFilter f;
                      f.decision_class = DecisionClass::kTriage;
                      for (const Decision& d : *tx.decisions().List(ws_.id, f, 1000)) {
                        if (d.source_episode_ids.at(0) == ep->id) id = *d.notification_id;
                      }
                      return Status::Ok();
                    })
                    .ok());
    EXPECT_FALSE(id.empty()) << external_id;
    return id;
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-11-30T09:00:00Z")};
  EngineConfig config_;
  ToolRegistry registry_;
  Workspace ws_;
  AuthContext auth_;
};

TEST_F(ReadToolsTest, SeedExampleVipDuringDeepWork) {
  // Sarah (VIP), Tue 24 Nov 10:15, during the 09:00-11:00 "deep work" block.
  json why =
      Call("meta.why_this_notification", {{"notification_id", NotificationFor("demo-0113")}});
  EXPECT_EQ(why["triage_class"], "surface_at_transition");
  EXPECT_EQ(why["rule_summary"],
            "Surface emails from VIP counterparties at the next focus-block break.");
  EXPECT_EQ(why["confidence"], "pretty_sure");
  std::vector<std::string> kinds;
  for (const auto& s : why["contributing_signals"]) kinds.push_back(s["kind"]);
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "vip_counterparty"), kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "active_focus_block"), kinds.end());
  EXPECT_EQ(why["contributing_signals"][1]["summary"],
            "Calendar block 'deep work' active until 11:00.");
  EXPECT_EQ(why.size(), 7u);  // exactly the seed's fields
  EXPECT_EQ(why["agent_version"].get<std::string>().rfind("av_", 0), 0u);
  EXPECT_EQ(why["world_version"].get<std::string>().rfind("wv_", 0), 0u);
}

TEST_F(ReadToolsTest, MarcusOnTuesdayIsAStrongPattern) {
  json why =
      Call("meta.why_this_notification", {{"notification_id", NotificationFor("demo-0115")}});
  EXPECT_EQ(why["triage_class"], "interrupt_now");
  EXPECT_EQ(why["confidence"], "strong_pattern");
  EXPECT_EQ(why["rule_summary"],
            "Reply to Marcus quickly on Tuesdays — he expects same-day for project updates.");
}

// A proposed action's inspection says why it went out at its level and what happened to it
// since, from the decision and its ledger; a proposal recorded before the decision kept its
// level's reason (before issue #41) still shows it, from its ledger entry.
TEST_F(ReadToolsTest, DecisionInspectOfAProposalShowsItsLevelReasonAndHistory) {
  ASSERT_TRUE(
      IngestJsonl(*store_, clock_, ws_.id,
                  R"({"type":"entity","name":"Ray Reason","identifiers":["ray@r.example"]})")
          .ok());
  CommunicateRequest req;
  req.to = "ray@r.example";
  req.message = "Does Thursday still work?";
  req.token_id = "tok";
  auto sent = ActionEngine(*store_, clock_, config_.actions).Communicate(ws_.id, req);
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  const std::string id = sent->decision_id;
  json d = Call("decision.inspect", {{"decision_id", id}});
  EXPECT_EQ(d["decision_class"], "action_proposed");
  EXPECT_EQ(d["status"], "pending");
  const std::string reason = d.value("level_reason", "");
  EXPECT_EQ(
      reason.rfind("Held for your approval: trust for communicate with Ray Reason is level 1", 0),
      0u)
      << d;
  ASSERT_EQ(d["history"].size(), 1u) << d;
  EXPECT_EQ(d["history"][0]["event"], "proposed");
  EXPECT_EQ(d["history"][0]["ledger_entry_id"], d["ledger_entry_id"]);
  EXPECT_FALSE(d["history"][0].contains("by")) << d;

  store_.ExecRaw(store_.is_postgres()
                     ? "UPDATE decisions SET details = (details::jsonb - 'level_reason')::text"
                       " WHERE id = '" +
                           id + "'"
                     : "UPDATE decisions SET details = json_remove(details, '$.level_reason')"
                       " WHERE id = '" +
                           id + "'");
  json before = Call("decision.inspect", {{"decision_id", id}});
  EXPECT_EQ(before.value("level_reason", ""), reason) << before;
  EXPECT_EQ(before["history"], d["history"]);
}

TEST_F(ReadToolsTest, DecisionInspectGivesTheSeedShape) {
  json list = Call("decision.list", {{"decision_class", "triage"}, {"limit", 1}});
  ASSERT_EQ(list["decisions"].size(), 1u);
  std::string id = list["decisions"][0]["decision_id"];
  json d = Call("decision.inspect", {{"decision_id", id}});
  EXPECT_EQ(d["decision_id"], id);
  EXPECT_EQ(d["decision_class"], "triage");
  EXPECT_TRUE(d["reasoning"].contains("trace_id"));
  EXPECT_EQ(d["reasoning"]["trace_id"].get<std::string>().rfind("trc_", 0), 0u);
  EXPECT_FALSE(d["reasoning"]["source_episode_ids"].empty());
  EXPECT_TRUE(d.contains("occurred_at"));
  EXPECT_TRUE(d.contains("world_version"));
}

TEST_F(ReadToolsTest, DecisionListFiltersAndPages) {
  json all = Call("decision.list", {{"limit", 100}});
  size_t total = all["decisions"].size();
  EXPECT_GT(total, 30u);
  // Pages of 7 give the same decisions, newest first, with no repeats.
  std::vector<std::string> paged;
  json args = {{"limit", 7}};
  for (int guard = 0; guard < 100; ++guard) {
    json page = Call("decision.list", args);
    for (const auto& d : page["decisions"]) paged.push_back(d["decision_id"]);
    if (!page.contains("next_cursor")) break;
    args["cursor"] = page["next_cursor"];
  }
  ASSERT_EQ(paged.size(), total);
  EXPECT_TRUE(std::is_sorted(paged.rbegin(), paged.rend()));
  for (size_t i = 0; i < total; ++i) EXPECT_EQ(paged[i], all["decisions"][i]["decision_id"]);

  json marcus = Call("decision.list", {{"counterparty", "marcus.webb@harborline.example"}});
  EXPECT_FALSE(marcus["decisions"].empty());
  for (const auto& d : marcus["decisions"]) {
    EXPECT_NE(d["payload_summary"].get<std::string>().find("Marcus"), std::string::npos);
  }
  json recorded = Call("decision.list", {{"status", "recorded"}, {"limit", 100}});
  EXPECT_EQ(recorded["decisions"].size(), total);
  json pending = Call("decision.list", {{"status", "pending"}});
  EXPECT_TRUE(pending["decisions"].empty());
  json future = Call("decision.list", {{"since", "2030-01-01T00:00:00Z"}});
  EXPECT_TRUE(future["decisions"].empty());
  json past = Call("decision.list", {{"until", "2020-01-01T00:00:00Z"}});
  EXPECT_TRUE(past["decisions"].empty());
}

// People use names (issue #48): a name Cortex knows filters as the address does; a name
// of several people is an error listing each with an address; a name of no one, not_found.
TEST_F(ReadToolsTest, DecisionListTakesANameForTheCounterparty) {
  json by_address = Call("decision.list", {{"counterparty", "marcus.webb@harborline.example"}});
  ASSERT_FALSE(by_address["decisions"].empty());
  EXPECT_EQ(Call("decision.list", {{"counterparty", "Marcus"}}), by_address);
  EXPECT_EQ(Call("decision.list", {{"counterparty", "marcus webb"}}), by_address);

  ASSERT_TRUE(
      IngestJsonl(*store_, clock_, ws_.id,
                  R"({"type":"entity","name":"Dana Reyes","identifiers":["dana@reyes.example"]})"
                  "\n"
                  R"({"type":"entity","name":"Dana Lee","identifiers":["dana@lee.example"]})")
          .ok());
  json two = Call("decision.list", {{"counterparty", "Dana"}}, /*expect_error=*/true);
  EXPECT_EQ(two["error"], "invalid_arguments") << two.dump();
  const std::string message = two["message"];
  EXPECT_NE(message.find("field 'counterparty': 'Dana' matches 3 people: "), std::string::npos)
      << message;
  EXPECT_NE(message.find("Dana Lee <dana@lee.example>"), std::string::npos) << message;
  EXPECT_NE(message.find("Dana Okafor <dana.okafor@northwind.example>"), std::string::npos)
      << message;
  EXPECT_NE(message.find("Dana Reyes <dana@reyes.example>"), std::string::npos) << message;
  // The whole name of one of them is that one.
  json reyes = Call("decision.list", {{"counterparty", "Dana Reyes"}});
  EXPECT_TRUE(reyes["decisions"].empty());

  json nobody = Call("decision.list", {{"counterparty", "Zebulon"}}, /*expect_error=*/true);
  EXPECT_EQ(nobody["error"], "not_found") << nobody.dump();
  EXPECT_NE(nobody["message"].get<std::string>().find("no one named 'Zebulon' is known"),
            std::string::npos)
      << nobody.dump();
}

TEST_F(ReadToolsTest, DecisionListByCounterpartyHasEveryClassNewestFirst) {
  // Marcus has triage decisions; give him one of each other class, made later.
  const std::string who = "marcus.webb@harborline.example";
  std::vector<std::string> added;
  std::string marcus_id;
  auto decision = [&](const std::string& cls, const std::string& status) {
    Decision d;
    d.id = NewId("dec_", clock_);
    d.workspace_id = ws_.id;
    d.decision_class = *Parse<DecisionClass>(cls);
    d.status = *Parse<DecisionStatus>(status);
    d.occurred_at = clock_.Now();
    d.confidence = "just_guessing";
    d.trace_id = NewId("trc_", clock_);
    d.agent_version = "av_x";
    d.world_version = "wv_x";
    return d;
  };
  ASSERT_TRUE(store_
                  ->Write([&](WriteTx& tx) -> Status {
                    auto marcus = ResolveEntity(tx, ws_.id, who);
                    if (!marcus.ok()) return marcus.status();
                    marcus_id = marcus->id;
                    for (const char* cls : {"rule_fired", "action_proposed", "trust_transition"}) {
                      clock_.Advance(std::chrono::minutes(1));
                      Decision d = decision(
                          cls, std::string(cls) == "action_proposed" ? "pending" : "recorded");
                      d.entity_id = marcus->id;
                      CORTEX_RETURN_IF_ERROR(tx.decisions().Insert(d));
                      added.push_back(d.id);
                    }
                    return Status::Ok();
                  })
                  .ok());
  // What the list by counterparty should hold: every decision of his, newest first, read
  // here through lists by status alone (one range of decisions_by_status each).
  auto his = [&](const char* status) {
    json page = Call("decision.list", {{"status", status}, {"limit", 100}});
    EXPECT_FALSE(page.contains("next_cursor"));
    std::vector<std::string> ids;
    for (const auto& d : page["decisions"]) {
      if (d.value("counterparty_id", "") == marcus_id) ids.push_back(d["decision_id"]);
    }
    return ids;
  };
  std::vector<std::string> recorded = his("recorded"), pending = his("pending");
  ASSERT_EQ(pending, std::vector<std::string>{added[1]});
  std::vector<std::string> expected = recorded;
  expected.insert(expected.end(), pending.begin(), pending.end());
  std::sort(expected.rbegin(), expected.rend());
  ASSERT_GT(expected.size(), added.size());
  EXPECT_EQ(std::vector<std::string>(expected.begin(), expected.begin() + 3),
            std::vector<std::string>(added.rbegin(), added.rend()));
  // Paged two at a time, so pages cut across classes.
  std::vector<std::string> paged;
  json args = {{"counterparty", who}, {"limit", 2}};
  for (int guard = 0; guard < 100; ++guard) {
    json page = Call("decision.list", args);
    for (const auto& d : page["decisions"]) paged.push_back(d["decision_id"]);
    if (!page.contains("next_cursor")) break;
    args["cursor"] = page["next_cursor"];
  }
  EXPECT_EQ(paged, expected);
  // With a status: the classes that can have it.
  auto ids = [](const json& page) {
    std::vector<std::string> out;
    for (const auto& d : page["decisions"]) out.push_back(d["decision_id"]);
    return out;
  };
  EXPECT_EQ(
      ids(Call("decision.list", {{"counterparty", who}, {"status", "recorded"}, {"limit", 100}})),
      recorded);
  EXPECT_EQ(ids(Call("decision.list", {{"counterparty", who}, {"status", "pending"}})), pending);
  // One class. (A class the store would not list cannot be written: it is a DecisionClass.)
  json fired = Call("decision.list", {{"counterparty", who}, {"decision_class", "rule_fired"}});
  // The one above, newest, then those his Tuesday rule made when his messages were triaged.
  ASSERT_GE(fired["decisions"].size(), 2u);
  EXPECT_EQ(fired["decisions"][0]["decision_id"], added[0]);
  for (const auto& d : fired["decisions"]) EXPECT_EQ(d["decision_class"], "rule_fired");
  // The store refuses a status its class never has, which those lists would skip.
  Status pending_triage = store_->Write([&](WriteTx& tx) {
    Decision d = decision("triage", "pending");
    d.entity_id = marcus_id;
    return tx.decisions().Insert(d);
  });
  EXPECT_EQ(pending_triage.code(), Code::kInternal) << pending_triage.ToString();
  // Only a proposal's status moves, and never to `recorded`.
  auto set_status = [&](const std::string& id, const std::string& status) {
    return store_->Write([&](WriteTx& tx) {
      return tx.decisions().SetStatus(ws_.id, id, *Parse<DecisionStatus>(status));
    });
  };
  EXPECT_EQ(set_status(added[0], "rejected").code(), Code::kInternal);  // rule_fired
  EXPECT_EQ(set_status(added[1], "recorded").code(), Code::kInternal);  // the proposal
  EXPECT_TRUE(his("rejected").empty());
  EXPECT_EQ(ids(Call("decision.list", {{"counterparty", who}, {"limit", 100}})), expected);
  // A class with a status it never has is nothing; with its one status, the whole class.
  EXPECT_TRUE(
      Call("decision.list", {{"decision_class", "triage"}, {"status", "pending"}})["decisions"]
          .empty());
  EXPECT_EQ(ids(Call("decision.list",
                     {{"decision_class", "triage"}, {"status", "recorded"}, {"limit", 100}})),
            ids(Call("decision.list", {{"decision_class", "triage"}, {"limit", 100}})));
}

// decision.list rows carry a triage decision's class, and the list filters by it: "what was
// held for a break" is one call. Each triage class is one range of decisions_by_class
// (migration 18); a class-wide list merges them, the same rows as before.
TEST_F(ReadToolsTest, DecisionListCarriesAndFiltersByTriageClass) {
  auto ids = [](const json& page) {
    std::vector<std::string> out;
    for (const auto& d : page["decisions"]) out.push_back(d["decision_id"]);
    return out;
  };
  json triage = Call("decision.list", {{"decision_class", "triage"}, {"limit", 100}});
  ASSERT_GT(triage["decisions"].size(), 30u);
  std::map<std::string, std::vector<std::string>> by_class;
  for (const auto& d : triage["decisions"]) {
    ASSERT_TRUE(d.contains("triage_class")) << d.dump();
    // The same class as the decision's notification.
    json why = Call("meta.why_this_notification", {{"notification_id", d["notification_id"]}});
    EXPECT_EQ(d["triage_class"], why["triage_class"]) << d.dump();
    by_class[d["triage_class"]].push_back(d["decision_id"]);
  }
  EXPECT_GE(by_class.size(), 3u);
  std::vector<std::string> all = ids(triage);
  EXPECT_TRUE(std::is_sorted(all.rbegin(), all.rend()));
  for (const auto& [cls, expected] : by_class) {
    json held = Call("decision.list", {{"triage_class", cls}, {"limit", 100}});
    EXPECT_EQ(ids(held), expected) << cls;
    for (const auto& d : held["decisions"]) EXPECT_EQ(d["decision_class"], "triage");
    // With the class named too, and page by page.
    std::vector<std::string> paged;
    json args = {{"decision_class", "triage"}, {"triage_class", cls}, {"limit", 2}};
    for (int guard = 0; guard < 100; ++guard) {
      json page = Call("decision.list", args);
      std::vector<std::string> got = ids(page);
      paged.insert(paged.end(), got.begin(), got.end());
      if (!page.contains("next_cursor")) break;
      args["cursor"] = page["next_cursor"];
    }
    EXPECT_EQ(paged, expected) << cls;
  }
  // Sarah's 10:15 email, held for the 11:00 break, is among those held.
  std::string sarah_ntf = NotificationFor("demo-0113");
  json held = Call("decision.list", {{"triage_class", "surface_at_transition"}, {"limit", 100}});
  bool found = false;
  for (const auto& d : held["decisions"]) found |= d["notification_id"] == sarah_ntf;
  EXPECT_TRUE(found) << held.dump();
  // Of a counterparty: its triage decisions of that class only.
  const std::string sarah = "sarah.chen@northwind.example";
  json hers = Call("decision.list", {{"counterparty", sarah}, {"limit", 100}});
  std::vector<std::string> hers_held;
  for (const auto& d : hers["decisions"]) {
    if (d.value("triage_class", "") == "surface_at_transition")
      hers_held.push_back(d["decision_id"]);
  }
  ASSERT_FALSE(hers_held.empty());
  EXPECT_EQ(ids(Call("decision.list", {{"counterparty", sarah},
                                       {"triage_class", "surface_at_transition"},
                                       {"limit", 100}})),
            hers_held);
  // The whole workspace's list is unchanged: newest first across every range.
  json everything = Call("decision.list", {{"limit", 100}});
  std::vector<std::string> every = ids(everything);
  EXPECT_TRUE(std::is_sorted(every.rbegin(), every.rend()));
  EXPECT_EQ(ids(Call("decision.list", {{"status", "recorded"}, {"limit", 100}})), every);
  // A triage class with another class, or a status triage never has, is nothing / an error.
  json other = Call("decision.list",
                    {{"decision_class", "action_proposed"}, {"triage_class", "interrupt_now"}},
                    /*expect_error=*/true);
  EXPECT_EQ(other["error"], "invalid_arguments");
  EXPECT_TRUE(
      Call("decision.list", {{"triage_class", "interrupt_now"}, {"status", "pending"}})["decisions"]
          .empty());
  json bad = Call("decision.list", {{"triage_class", "later"}}, /*expect_error=*/true);
  EXPECT_EQ(bad["error"], "invalid_arguments");
}

// A store made before migration 18 gets each triage decision's class copied from its
// details when it is opened.
TEST_F(ReadToolsTest, TriageClassesOfAnEarlierStoreAreFilledIn) {
  json before = Call("decision.list", {{"decision_class", "triage"}, {"limit", 100}});
  store_.ExecRaw(
      "DROP INDEX decisions_by_class;"
      "ALTER TABLE decisions DROP COLUMN triage_class;"
      "CREATE INDEX decisions_by_class ON decisions(workspace_id, class, id);"
      "DELETE FROM schema_migrations WHERE number = 18;");
  store_.Reopen();
  json after = Call("decision.list", {{"decision_class", "triage"}, {"limit", 100}});
  EXPECT_EQ(after, before);
  json held = Call("decision.list", {{"triage_class", "surface_at_transition"}, {"limit", 100}});
  EXPECT_FALSE(held["decisions"].empty());
  // Other classes have none.
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) -> Status {
                    DecisionFilter f;
                    auto rows = tx.decisions().List(ws_.id, f, 100);
                    if (!rows.ok()) return rows.status();
                    for (const Decision& d : *rows) {
                      EXPECT_EQ(d.triage_class.has_value(),
                                d.decision_class == DecisionClass::kTriage);
                    }
                    return Status::Ok();
                  })
                  .ok());
}

TEST_F(ReadToolsTest, NotificationListShowsDueTransitionAndDigest) {
  // As of Tue 24 Nov 10:20: Sarah's 10:15 message waits for 11:00; the first-contact and
  // after-hours ones wait for the 17:00 digest on their day.
  json view = Call("notification.list", {{"as_of", "2026-11-24T10:20:00Z"}});
  ASSERT_FALSE(view["next_transition"].is_null());
  EXPECT_EQ(view["next_transition"]["at"], "2026-11-24T11:00:00Z");
  EXPECT_EQ(view["next_transition"]["notifications"][0]["counterparty"]["name"], "Sarah Chen");
  EXPECT_EQ(view["digest"]["at"], "2026-11-24T17:00:00Z");
  json later = Call("notification.list",
                    {{"as_of", "2026-11-24T11:00:00Z"}, {"since", "2026-11-24T10:59:00Z"}});
  ASSERT_EQ(later["due"].size(), 1u);
  EXPECT_EQ(later["due"][0]["triage_class"], "surface_at_transition");
  json friday = Call("notification.list", {{"as_of", "2026-11-27T16:00:00Z"}});
  bool taylor = false;
  for (const auto& n : friday["digest"]["notifications"]) {
    taylor |= n["counterparty"]["name"] == "taylor.brooks@brightfield.example";
  }
  EXPECT_TRUE(taylor) << friday.dump(2);
}

TEST_F(ReadToolsTest, DueNotificationsOfEveryClassComeNewestFirst) {
  // The whole demo week is due by 2027.
  json all =
      Call("notification.list",
           {{"as_of", "2027-01-01T00:00:00Z"}, {"since", "2026-01-01T00:00:00Z"}, {"limit", 100}});
  const json& due = all["due"];
  ASSERT_GT(due.size(), 10u);
  ASSERT_LT(due.size(), 100u);
  std::set<std::string> classes;
  for (size_t i = 0; i < due.size(); ++i) {
    classes.insert(due[i]["triage_class"].get<std::string>());
    if (i == 0) continue;
    // Newest first: by surfacing time, then by id.
    auto key = [](const json& n) {
      return std::make_pair(n["surface_at"].get<std::string>(),
                            n["notification_id"].get<std::string>());
    };
    EXPECT_GT(key(due[i - 1]), key(due[i])) << i;
  }
  EXPECT_EQ(classes,
            (std::set<std::string>{"interrupt_now", "surface_at_transition", "daily_digest"}));
  // A short page is the newest of them, whatever their classes.
  json first =
      Call("notification.list",
           {{"as_of", "2027-01-01T00:00:00Z"}, {"since", "2026-01-01T00:00:00Z"}, {"limit", 2}});
  ASSERT_EQ(first["due"].size(), 2u);
  EXPECT_EQ(first["due"][0], due[0]);
  EXPECT_EQ(first["due"][1], due[1]);
  // (A notification of a class the store would not list cannot be written: its class is a
  // TriageClass.)
}

TEST_F(ReadToolsTest, BadInputIsAClearToolError) {
  auto error = [&](const std::string& tool, const json& args) {
    return Call(tool, args, /*expect_error=*/true);
  };
  EXPECT_EQ(error("meta.why_this_notification",
                  {{"notification_id", "ntf_01M8PS06M053VVFGPPNAWWM0AA"}})["error"],
            "not_found");
  json wrong_kind =
      error("meta.why_this_notification", {{"notification_id", "ep_01M8PS06M053VVFGPPNAWWM0AA"}});
  EXPECT_EQ(wrong_kind["error"], "invalid_arguments");
  EXPECT_NE(wrong_kind["message"].get<std::string>().find("notification_id"), std::string::npos);
  EXPECT_EQ(error("decision.inspect", {{"decision_id", std::string(5000, 'x')}})["error"],
            "invalid_arguments");
  EXPECT_EQ(error("decision.inspect", {{"decision_id", "dec_01M8PS06M053VVFGPPNAWWM0AA"}})["error"],
            "not_found");
  EXPECT_EQ(error("decision.list", {{"cursor", "garbage"}}),
            json({{"status", "error"},
                  {"error", "invalid_arguments"},
                  {"message", "field 'cursor': not a cursor from decision.list"}}));
  json first = Call("decision.list", {{"limit", 1}});
  // A cursor continues only its own query, and only in its own tool.
  EXPECT_EQ(error("decision.list", {{"cursor", first["next_cursor"]}, {"status", "recorded"}}),
            json({{"status", "error"},
                  {"error", "invalid_arguments"},
                  {"message", "field 'cursor': it belongs to a query with other filters"}}));
  EXPECT_EQ(error("rule.list", {{"cursor", first["next_cursor"]}}),
            json({{"status", "error"},
                  {"error", "invalid_arguments"},
                  {"message", "field 'cursor': not a cursor from rule.list"}}));
  json rules = Call("rule.list", {{"limit", 1}});
  ASSERT_TRUE(rules.contains("next_cursor")) << rules;
  EXPECT_NE(Call("rule.list", {{"limit", 1}, {"cursor", rules["next_cursor"]}})["rules"],
            rules["rules"]);
  EXPECT_EQ(error("rule.list", {{"cursor", rules["next_cursor"]}, {"origin", "learned"}})["error"],
            "invalid_arguments");
  EXPECT_EQ(error("decision.list",
                  {{"since", "2026-11-25T00:00:00Z"}, {"until", "2026-11-24T00:00:00Z"}})["error"],
            "invalid_arguments");
  EXPECT_EQ(error("decision.list", {{"since", "yesterday"}})["error"], "invalid_arguments");
  EXPECT_EQ(error("decision.list", {{"limit", 1000}})["error"], "invalid_arguments");
  EXPECT_EQ(error("decision.list", {{"decision_class", "gossip"}})["error"], "invalid_arguments");
  EXPECT_EQ(error("decision.list", {{"counterparty", "nobody@nowhere.example"}})["error"],
            "not_found");
  EXPECT_EQ(error("notification.list",
                  {{"as_of", "2026-11-24T10:00:00Z"}, {"since", "2026-11-25T10:00:00Z"}})["error"],
            "invalid_arguments");
}

TEST_F(ReadToolsTest, AnotherWorkspacesIdsAreNotFound) {
  std::string ntf = NotificationFor("demo-0113");
  json d = Call("decision.list", {{"limit", 1}});
  std::string dec = d["decisions"][0]["decision_id"];
  Workspace other = *EnsureWorkspace(*store_, clock_, "other");
  AuthContext intruder{other.id, other.name, "tok2", kScopeRead};
  ToolContext ctx{intruder, *store_, clock_, "trc_x", nullptr, [](json) {}};
  EXPECT_EQ(
      registry_.Call("meta.why_this_notification", {{"notification_id", ntf}}, ctx).body()["error"],
      "not_found");
  EXPECT_EQ(registry_.Call("decision.inspect", {{"decision_id", dec}}, ctx).body()["error"],
            "not_found");
  EXPECT_TRUE(registry_.Call("decision.list", json::object(), ctx).body()["decisions"].empty());
  EXPECT_TRUE(registry_.Call("notification.list", {{"as_of", "2026-11-24T10:20:00Z"}}, ctx)
                  .body()["next_transition"]
                  .is_null());
}

TEST_F(ReadToolsTest, EntityLookupFindsAPersonByName) {
  // A whole name, any case and spacing; the start of one word of it.
  for (const char* name : {"Sarah Chen", "sarah  chen", "Sarah", "chen", "sarah ch"}) {
    json e = Call("entity.lookup", {{"identifier", name}});
    EXPECT_EQ(e["name"], "Sarah Chen") << name;
    EXPECT_EQ(e["identifiers"][0], "@sarahc") << e.dump();
  }
  // Not the middle of a word; nothing else shaped like a name either.
  EXPECT_EQ(Call("entity.lookup", {{"identifier", "arah"}}, true)["error"], "not_found");
  EXPECT_EQ(Call("entity.lookup", {{"identifier", "Nobody Here"}}, true)["error"], "not_found");
  // Several people: an error naming them, to look one up by identifier.
  ASSERT_TRUE(
      IngestJsonl(*store_, clock_, ws_.id,
                  R"({"type":"entity","name":"Sarah Okafor","identifiers":["so@x.example"]})")
          .ok());
  json two = Call("entity.lookup", {{"identifier", "sarah"}}, true);
  EXPECT_EQ(two["error"], "ambiguous") << two.dump();
  ASSERT_EQ(two["candidates"].size(), 2u) << two.dump();
  EXPECT_EQ(two["candidates"][0]["name"], "Sarah Chen");
  EXPECT_EQ(two["candidates"][1]["name"], "Sarah Okafor");
  EXPECT_EQ(two["candidates"][1]["identifiers"], json({"so@x.example"}));
  // A whole name still finds its one person among them.
  EXPECT_EQ(Call("entity.lookup", {{"identifier", "sarah okafor"}})["name"], "Sarah Okafor");
  // Identifiers are looked up as before: a malformed one is still a bad argument.
  EXPECT_EQ(Call("entity.lookup", {{"identifier", "sarah@"}}, true)["error"], "invalid_arguments");
  // Another workspace's people are never found by name.
  Workspace other = *EnsureWorkspace(*store_, clock_, "other");
  AuthContext intruder{other.id, other.name, "tok2", kScopeRead};
  ToolContext ctx{intruder, *store_, clock_, "trc_x", nullptr, [](json) {}};
  EXPECT_EQ(registry_.Call("entity.lookup", {{"identifier", "Sarah Chen"}}, ctx).body()["error"],
            "not_found");
}

TEST_F(ReadToolsTest, LookupsUseIndexesNotScans) {
  if (store_.is_postgres()) GTEST_SKIP() << "reads SQLite's query plans";
  auto plan = [&](const char* sql) { return store_.QueryPlan(sql); };
  std::string inspect = plan("SELECT * FROM decisions WHERE id = 'dec_x' AND workspace_id = 'ws'");
  EXPECT_NE(inspect.find("USING INDEX sqlite_autoindex_decisions_1 (id=?)"), std::string::npos)
      << inspect;
  std::string why = plan("SELECT * FROM notifications WHERE id = 'ntf_x' AND workspace_id = 'ws'");
  EXPECT_NE(why.find("(id=?)"), std::string::npos) << why;
  std::string list = plan(
      "SELECT * FROM decisions WHERE workspace_id = 'ws' AND class = 'action_proposed' AND "
      "triage_class = '' ORDER BY id DESC LIMIT 20");
  EXPECT_NE(list.find("USING INDEX decisions_by_class"), std::string::npos) << list;
  EXPECT_EQ(list.find("TEMP B-TREE"), std::string::npos) << list;  // no sort step
  // A range of one index, in the order asked, with no sort step.
  auto expect_range = [&](const char* sql, const char* index_use) {
    std::string p = plan(sql);
    EXPECT_NE(p.find(index_use), std::string::npos) << p;
    EXPECT_EQ(p.find("TEMP B-TREE"), std::string::npos) << p;
  };
  // One triage class's decisions (what was held for a break), newest first; from the
  // index alone when only ids are read (a list that merges ranges).
  expect_range(
      "SELECT * FROM decisions WHERE workspace_id = 'ws' AND class = 'triage' AND "
      "triage_class = 'surface_at_transition' ORDER BY id DESC LIMIT 21",
      "USING INDEX decisions_by_class (workspace_id=? AND class=? AND triage_class=?)");
  expect_range(
      "SELECT id FROM decisions WHERE workspace_id = 'ws' AND class = 'triage' AND "
      "triage_class = 'daily_digest' AND id < 'dec_9' ORDER BY id DESC LIMIT 21",
      "USING COVERING INDEX decisions_by_class (workspace_id=? AND class=? AND triage_class=? "
      "AND id<?)");
  // Another class: its one range ('' for every class but triage).
  expect_range(
      "SELECT * FROM decisions WHERE workspace_id = 'ws' AND class = 'rule_fired' AND "
      "triage_class = '' ORDER BY id DESC LIMIT 21",
      "USING INDEX decisions_by_class (workspace_id=? AND class=? AND triage_class=?)");
  // A counterparty's held decisions: its range, not the workspace's.
  expect_range(
      "SELECT * FROM decisions WHERE workspace_id = 'ws' AND class = 'triage' AND "
      "entity_id = 'e' AND triage_class || '' = 'surface_at_transition' ORDER BY id DESC "
      "LIMIT 21",
      "USING INDEX decisions_by_entity_class (workspace_id=? AND entity_id=? AND class=?)");
  // The approval inbox: pending proposals, from decisions_by_status.
  expect_range(
      "SELECT * FROM decisions WHERE workspace_id = 'ws' AND class = 'action_proposed' AND "
      "status = 'pending' ORDER BY id DESC LIMIT 21",
      "USING INDEX decisions_by_status (workspace_id=? AND status=?)");
  // A counterparty's latest decisions of one class (action.communicate's triage link).
  expect_range(
      "SELECT * FROM decisions WHERE workspace_id = 'ws' AND class = 'triage' AND "
      "entity_id = 'e' AND id >= 'dec_0' ORDER BY id DESC LIMIT 5",
      "USING INDEX decisions_by_entity_class (workspace_id=? AND entity_id=? AND class=? AND "
      "id>?)");
  // One class's due notifications, newest first (the due list merges one per class).
  expect_range(
      "SELECT * FROM notifications WHERE workspace_id = 'ws' AND triage_class = 'daily_digest' "
      "AND surface_at IS NOT NULL AND surface_at > 1 AND surface_at <= 2 "
      "ORDER BY surface_at DESC, id DESC LIMIT 5",
      "USING INDEX notifications_by_class (workspace_id=? AND triage_class=? AND surface_at>? "
      "AND surface_at<?)");
}

}  // namespace
}  // namespace cortex
