#include "engines/triage/triage.h"

#include <gtest/gtest.h>

#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/triage/signals.h"
#include "engines/world/ingest.h"
#include "store/decisions.h"
#include "store/episodes.h"
#include "store/notifications.h"
#include "store/rules.h"
#include "store/workspaces.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

using nlohmann::json;

class TriageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = *EnsureWorkspace(*store_, clock_, "alpha");
    Ingest(
        R"({"type":"entity","name":"Sarah Chen","identifiers":["sarah@n.example"],"tags":["vip","internal"]}
{"type":"entity","name":"Marcus Webb","identifiers":["marcus@h.example"],"tags":["external"]}
{"type":"entity","name":"Weekly","identifiers":["news@w.example"],"tags":["newsletter"]}
{"type":"episode","kind":"calendar_block","occurred_at":"2026-06-09T09:00:00Z","ends_at":"2026-06-09T11:00:00Z","subject":"deep work","summary":"Focus"})");
  }

  void Ingest(const std::string& jsonl) {
    auto r = IngestJsonl(*store_, clock_, ws_.id, jsonl);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // Ingests one inbound message and returns its triage decision.
  Decision Receive(const std::string& from, const std::string& at, const std::string& subject,
                   const std::string& thread = "") {
    json line = {{"type", "episode"},    {"kind", "message_received"}, {"occurred_at", at},
                 {"counterparty", from}, {"subject", subject},         {"summary", subject}};
    if (!thread.empty()) line["thread"] = thread;
    Ingest(line.dump());
    Decision d;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      DecisionFilter f;
                      f.decision_class = DecisionClass::kTriage;
                      d = tx.decisions().List(ws_.id, f, 1)->at(0);
                      return Status::Ok();
                    })
                    .ok());
    return d;
  }

  static std::vector<std::string> Kinds(const Decision& d) {
    std::vector<std::string> out;
    const nlohmann::json details = d.Details();
    for (const auto& s : details.at("signals")) out.push_back(s["kind"]);
    return out;
  }

  static bool HasKind(const Decision& d, const std::string& k) {
    auto v = Kinds(d);
    return std::find(v.begin(), v.end(), k) != v.end();
  }

  static std::string SummaryOf(const Decision& d, const std::string& kind) {
    const nlohmann::json details = d.Details();
    for (const auto& s : details.at("signals")) {
      if (s["kind"] == kind) return s["summary"];
    }
    return "";
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-10T09:00:00Z")};
  Workspace ws_;
};

TEST_F(TriageTest, VipDuringFocusBlockIsHeldUntilItEnds_DefaultPolicy) {
  Decision d = Receive("sarah@n.example", "2026-06-09T10:15:00Z", "Q3 plan");
  EXPECT_EQ(d.Details()["triage_class"], "surface_at_transition");
  EXPECT_EQ(d.Details()["surface_at"], "2026-06-09T11:00:00Z");
  EXPECT_EQ(d.confidence, "just_guessing");
  EXPECT_FALSE(d.rule_id.has_value());
  EXPECT_TRUE(HasKind(d, "vip_counterparty"));
  EXPECT_TRUE(HasKind(d, "active_focus_block"));
  const nlohmann::json details = d.Details();
  for (const auto& s : details.at("signals")) {
    if (s["kind"] == "active_focus_block") {
      EXPECT_EQ(s["summary"], "Calendar block 'deep work' active until 11:00.");
    }
    if (s["kind"] == "vip_counterparty") {
      EXPECT_EQ(s["summary"], "Sender is in VIP watchlist.");
    }
  }
}

// The default policy names the clause that decided and its evidence (issue #48): Marcus (no
// VIP) writing "urgent" is not explained by VIPs, and Sarah's calm mail not by urgency.
TEST_F(TriageTest, TheDefaultPolicyNamesTheClauseThatApplied) {
  Decision urgent = Receive("marcus@h.example", "2026-06-09T14:00:00Z", "Urgent: cutover");
  EXPECT_EQ(urgent.Details()["triage_class"], "interrupt_now");
  EXPECT_EQ(*urgent.rule_summary, "No rule matched; default policy: urgent messages interrupt. " +
                                      SummaryOf(urgent, "urgent_language"));
  EXPECT_EQ(urgent.rule_summary->find("VIP"), std::string::npos) << *urgent.rule_summary;

  Decision vip = Receive("sarah@n.example", "2026-06-09T15:00:00Z", "Q3 plan");
  EXPECT_EQ(vip.Details()["triage_class"], "interrupt_now");
  EXPECT_EQ(*vip.rule_summary,
            "No rule matched; default policy: messages from VIPs interrupt. Sender is in VIP "
            "watchlist.");
}

// First contact means no earlier episode of any kind with the person: a meeting or a
// message sent to them counts as much as a message from them.
TEST_F(TriageTest, AnEarlierEpisodeOfAnyKindIsNotFirstContact) {
  const char* kinds[][2] = {{"message_sent", ""},
                            {"message_received", ""},
                            {"meeting", R"(,"ends_at":"2026-06-08T10:00:00Z")"},
                            {"calendar_block", R"(,"ends_at":"2026-06-08T10:00:00Z")"}};
  int n = 0;
  for (const auto& [kind, extra] : kinds) {
    std::string who = "k" + std::to_string(n++) + "@kinds.example";
    Ingest(std::string(R"({"type":"episode","kind":")") + kind +
           R"(","occurred_at":"2026-06-08T09:00:00Z","counterparty":")" + who +
           R"(","summary":"earlier")" + extra + "}");
    EXPECT_FALSE(HasKind(Receive(who, "2026-06-09T14:00:00Z", "Hello"), "first_contact")) << kind;
  }
  EXPECT_TRUE(HasKind(Receive("k9@kinds.example", "2026-06-09T14:00:00Z", "Hi"), "first_contact"));

  // A message from them long past the wait for a reply still counts; one from later on
  // (ingested first) does not.
  Ingest(
      R"({"type":"episode","kind":"message_received","occurred_at":"2026-04-01T09:00:00Z","counterparty":"old@kinds.example","summary":"spring"}
{"type":"episode","kind":"message_received","occurred_at":"2026-06-20T09:00:00Z","counterparty":"later@kinds.example","summary":"summer"})");
  EXPECT_FALSE(
      HasKind(Receive("old@kinds.example", "2026-06-09T14:00:00Z", "Hello"), "first_contact"));
  EXPECT_TRUE(
      HasKind(Receive("later@kinds.example", "2026-06-09T14:00:00Z", "Hello"), "first_contact"));
}

// Within one batch, a message is triaged with its sender as the lines before it left
// them: a tag added half-way applies to the messages after it, not before.
TEST_F(TriageTest, AnEntityLineAppliesToTheRestOfItsBatch) {
  Ingest(
      R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-09T14:00:00Z","counterparty":"dana@x.example","summary":"one"}
{"type":"entity","name":"Dana","identifiers":["dana@x.example"],"tags":["vip"]}
{"type":"episode","kind":"message_received","occurred_at":"2026-06-09T14:05:00Z","counterparty":"dana@x.example","summary":"two"})");
  std::vector<Decision> triage;
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    DecisionFilter f;
                    f.decision_class = DecisionClass::kTriage;
                    triage = *tx.decisions().List(ws_.id, f, 2);  // newest first
                    return Status::Ok();
                  })
                  .ok());
  ASSERT_EQ(triage.size(), 2u);
  EXPECT_TRUE(HasKind(triage[0], "vip_counterparty"));
  EXPECT_NE(triage[0].payload_summary.find("Dana's"), std::string::npos)
      << triage[0].payload_summary;
  EXPECT_FALSE(HasKind(triage[1], "vip_counterparty"));
  EXPECT_NE(triage[1].payload_summary.find("dana@x.example's"), std::string::npos)
      << triage[1].payload_summary;
}

TEST_F(TriageTest, EachSignal) {
  Decision first = Receive("new@person.example", "2026-06-09T14:00:00Z", "Hello");
  EXPECT_TRUE(HasKind(first, "first_contact"));
  EXPECT_EQ(first.Details()["triage_class"], "daily_digest");
  EXPECT_EQ(first.Details()["surface_at"], "2026-06-09T17:00:00Z");

  Decision again = Receive("new@person.example", "2026-06-09T15:00:00Z", "Hello again", "t1");
  EXPECT_FALSE(HasKind(again, "first_contact"));
  EXPECT_TRUE(HasKind(again, "awaiting_your_reply"));

  Ingest(
      R"({"type":"episode","kind":"message_sent","occurred_at":"2026-06-09T15:30:00Z","counterparty":"new@person.example","summary":"reply","thread":"t1"})");
  Decision answered = Receive("new@person.example", "2026-06-09T16:00:00Z", "Thanks", "t1");
  EXPECT_FALSE(HasKind(answered, "awaiting_your_reply"));
  EXPECT_TRUE(HasKind(answered, "thread_active"));  // two others in t1 within 24 h

  Decision urgent = Receive("marcus@h.example", "2026-06-09T13:00:00Z", "Need this ASAP");
  EXPECT_TRUE(HasKind(urgent, "urgent_language"));
  EXPECT_EQ(urgent.Details()["triage_class"], "interrupt_now");

  Decision late = Receive("marcus@h.example", "2026-06-09T21:30:00Z", "tomorrow is fine");
  EXPECT_EQ(SummaryOf(late, "after_hours"),
            "Arrived Tue 21:30, outside working hours (09:00-18:00, Mon-Fri).");
  Decision weekend = Receive("marcus@h.example", "2026-06-13T12:00:00Z", "weekend note");
  EXPECT_TRUE(HasKind(weekend, "after_hours"));  // a Saturday
  Decision newsletter = Receive("news@w.example", "2026-06-09T12:00:00Z", "Issue 1");
  EXPECT_EQ(newsletter.Details()["triage_class"], "handle_silently");
  EXPECT_TRUE(newsletter.Details()["surface_at"].is_null());
}

TEST_F(TriageTest, RulesDecideInOrderWithTheirConfidenceAndHits) {
  Ingest(
      R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-01T10:00:00Z","counterparty":"sarah@n.example","summary":"old 1","external_id":"e1"}
{"type":"episode","kind":"message_received","occurred_at":"2026-06-02T10:00:00Z","counterparty":"sarah@n.example","summary":"old 2","external_id":"e2"}
{"type":"episode","kind":"message_received","occurred_at":"2026-06-03T10:00:00Z","counterparty":"sarah@n.example","summary":"old 3","external_id":"e3"})");
  auto imported = ImportRules(*store_, clock_, ws_.id, R"(
rules:
  - name: vip-at-break
    summary: Surface emails from VIP counterparties at the next focus-block break.
    when: { tags: vip, signals: active_focus_block }
    then: { triage: surface_at_transition }
    evidence: [e1, e2, e3]
  - name: vip-urgent
    summary: Urgent VIP mail interrupts.
    when: { tags: vip, signals: urgent_language }
    then: { triage: interrupt_now }
    priority: 10
)");
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  Decision held = Receive("sarah@n.example", "2026-06-09T10:15:00Z", "Q3 plan");
  EXPECT_EQ(held.Details()["triage_class"], "surface_at_transition");
  EXPECT_EQ(*held.rule_summary,
            "Surface emails from VIP counterparties at the next focus-block break.");
  EXPECT_EQ(held.confidence, "pretty_sure");
  EXPECT_EQ(held.agent_version, imported->agent_version);
  EXPECT_EQ(held.source_episode_ids.size(), 4u);  // the message and the rule's evidence

  Decision urgent = Receive("sarah@n.example", "2026-06-09T10:20:00Z", "urgent: sign this");
  EXPECT_EQ(urgent.Details()["triage_class"], "interrupt_now");
  EXPECT_EQ(*urgent.rule_summary, "Urgent VIP mail interrupts.");
  EXPECT_EQ(urgent.confidence, "just_guessing");  // no evidence

  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    auto rule = tx.rules().Get(ws_.id, *held.rule_id);
                    EXPECT_EQ(rule->hits, 1);
                    return Status::Ok();
                  })
                  .ok());
}

// A triage rule that decides a message fires: a rule_fired decision on the same trace,
// with the rule, its confidence, its evidence and the message, linked to the triage
// decision. A message no rule decides (the default policy) fires nothing.
TEST_F(TriageTest, ATriageRuleThatDecidesFires) {
  Ingest(
      R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-01T10:00:00Z","counterparty":"marcus@h.example","summary":"old 1","external_id":"m1"}
{"type":"episode","kind":"message_received","occurred_at":"2026-06-02T10:00:00Z","counterparty":"marcus@h.example","summary":"old 2","external_id":"m2"}
{"type":"episode","kind":"message_received","occurred_at":"2026-06-03T10:00:00Z","counterparty":"marcus@h.example","summary":"old 3","external_id":"m3"})");
  auto fired = [&] {
    std::vector<Decision> out;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      DecisionFilter f;
                      f.decision_class = DecisionClass::kRuleFired;
                      out = *tx.decisions().List(ws_.id, f, 100);
                      return Status::Ok();
                    })
                    .ok());
    return out;
  };
  ASSERT_TRUE(fired().empty()) << "no rule yet: the default policy fires nothing";
  auto imported = ImportRules(*store_, clock_, ws_.id, R"(
rules:
  - name: marcus-tuesdays
    summary: Reply to Marcus quickly on Tuesdays.
    when: { counterparty: marcus@h.example, weekdays: tue }
    then: { triage: interrupt_now }
    evidence: [m1, m2, m3]
)");
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  Decision wed = Receive("marcus@h.example", "2026-06-10T08:00:00Z", "Wednesday note");
  EXPECT_FALSE(wed.rule_id.has_value());
  EXPECT_TRUE(fired().empty()) << "the rule did not match on a Wednesday";

  Decision tue = Receive("marcus@h.example", "2026-06-09T08:00:00Z", "Status update");
  auto all = fired();
  ASSERT_EQ(all.size(), 1u);
  const Decision& f = all[0];
  EXPECT_EQ(f.rule_id, tue.rule_id);
  EXPECT_EQ(*f.rule_summary, "Reply to Marcus quickly on Tuesdays.");
  EXPECT_EQ(f.confidence, "pretty_sure");
  EXPECT_EQ(f.trace_id, tue.trace_id);
  EXPECT_EQ(f.triage_decision_id, tue.id);
  EXPECT_EQ(f.entity_id, tue.entity_id);
  EXPECT_EQ(f.agent_version, imported->agent_version);
  EXPECT_EQ(f.source_episode_ids, tue.source_episode_ids);  // the message, then the evidence
  EXPECT_EQ(f.source_episode_ids.size(), 4u);
  EXPECT_EQ(f.payload_summary,
            "Rule 'marcus-tuesdays' fired on Marcus Webb's email 'Status update': interrupt_now.");
  json details = f.Details();
  EXPECT_EQ(details["rule_name"], "marcus-tuesdays");
  EXPECT_EQ(details["origin"], "user");
  EXPECT_EQ(details["episode_id"], tue.source_episode_ids.at(0));
  EXPECT_EQ(details["then"]["triage"], "interrupt_now");
}

TEST_F(TriageTest, NotificationAndDecisionAreWrittenWithTheEpisode) {
  Decision d = Receive("sarah@n.example", "2026-06-09T14:00:00Z", "hi");
  ASSERT_TRUE(d.notification_id.has_value());
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    auto n = tx.notifications().Get(ws_.id, *d.notification_id);
                    EXPECT_TRUE(n.ok());
                    EXPECT_EQ(n->decision_id, d.id);
                    EXPECT_EQ(n->episode_id, d.source_episode_ids.at(0));
                    auto ep = tx.episodes().Get(ws_.id, n->episode_id);
                    EXPECT_EQ(ep->world_version, d.world_version);
                    EXPECT_EQ(tx.workspaces().Get(ws_.id)->world_version, d.world_version);
                    return Status::Ok();
                  })
                  .ok());
  // A failed batch leaves no triage behind.
  auto bad = IngestJsonl(
      *store_, clock_, ws_.id,
      R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-09T15:00:00Z","counterparty":"sarah@n.example","summary":"ok"}
{"type":"episode","kind":"message_received","occurred_at":"2026-06-09T15:00:00Z","counterparty":"entity_01M8PS06M053VVFGPPNAWWM0AA","summary":"bad"})");
  ASSERT_FALSE(bad.ok());
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    EXPECT_EQ(tx.decisions().List(ws_.id, {}, 10)->size(), 1u);
                    return Status::Ok();
                  })
                  .ok());
}

TEST(LocalTimeTest, WindowsMayWrapMidnight) {
  EXPECT_TRUE(InWindow(23 * 60, 22 * 60, 6 * 60));
  EXPECT_TRUE(InWindow(5 * 60, 22 * 60, 6 * 60));
  EXPECT_FALSE(InWindow(12 * 60, 22 * 60, 6 * 60));
  EXPECT_TRUE(InWindow(9 * 60, 9 * 60, 18 * 60));
  EXPECT_FALSE(InWindow(18 * 60, 9 * 60, 18 * 60));
}

TEST(LocalTimeTest, OffsetsWeekdaysAndDigest) {
  WorkspaceSettings s;
  s.utc_offset_minutes = -5 * 60;
  TimePoint t = *ParseTime("2026-06-09T03:30:00Z");  // Tue 03:30 UTC = Mon 22:30 at -05:00
  LocalTime lt = ToLocal(t, s);
  EXPECT_EQ(lt.weekday, 0);
  EXPECT_EQ(lt.minute_of_day, 22 * 60 + 30);
  EXPECT_EQ(FormatTime(NextDigest(t, s)), "2026-06-09T22:00:00Z");  // Tue 17:00 local
  s.utc_offset_minutes = 0;
  EXPECT_EQ(FormatTime(NextDigest(*ParseTime("2026-06-09T17:00:00Z"), s)), "2026-06-10T17:00:00Z");
}

}  // namespace
}  // namespace cortex
