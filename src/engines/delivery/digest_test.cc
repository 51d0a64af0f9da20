// The daily digest and the events pushed to the person: what each carries, that a digest
// goes out once per day (also after a restart), and that only fresh events are pushed.
#include "engines/delivery/digest.h"

#include <gtest/gtest.h>

#include "core/time.h"
#include "engines/actions/actions.h"
#include "engines/auth/tokens.h"
#include "engines/delivery/delivery.h"
#include "engines/delivery/pushes.h"
#include "engines/triage/rules.h"
#include "engines/world/ingest.h"
#include "store/decisions.h"
#include "store/outbox.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

using nlohmann::json;

TimePoint At(const char* rfc3339) { return *ParseTime(rfc3339); }

// Records what it is given; fails every delivery while `down`.
class Receiver : public Connector {
 public:
  const char* name() const override { return "receiver"; }
  Status Deliver(const OutboxItem& item) override {
    if (down) return Status::Unavailable("receiver down");
    got.push_back(item);
    return Status::Ok();
  }
  bool down = false;
  std::vector<OutboxItem> got;
};

class TellThePerson : public ::testing::Test {
 protected:
  // Wednesday 10 June 2026, 16:00 UTC; the workspace's digest goes out at 17:00 UTC, to
  // "me" (the webhook's receiver knows who that is).
  void SetUp() override {
    ws_ = *EnsureWorkspace(*store_, clock_, "alpha");
    ASSERT_TRUE(ImportRules(*store_, clock_, ws_.id, "rules:\nsettings:\n  digest_to: me\n").ok());
  }

  void Ingest(const std::string& jsonl) {
    auto r = IngestJsonl(*store_, clock_, ws_.id, jsonl);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  ActionResult Draft(const std::string& to) {
    CommunicateRequest req;
    req.to = to;
    req.message = "Can we move Thursday's review to Friday?";
    auto r = ActionEngine(*store_, clock_, ActionConfig{}).Communicate(ws_.id, req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ActionResult{};
  }

  int Compose(const char* now) {
    clock_.Set(At(now));
    auto n = ComposeDueDigests(*store_, clock_, clock_.Now());
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    return n.ok() ? *n : -1;
  }

  std::vector<OutboxItem> Outbox(OutboxKind kind) {
    std::vector<OutboxItem> out;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      out = *tx.outbox().List(ws_.id, kind, 100);
                      return Status::Ok();
                    })
                    .ok());
    return out;
  }

  std::vector<Decision> Digests(std::optional<DecisionStatus> status = std::nullopt) {
    std::vector<Decision> out;
    DecisionFilter f;
    f.decision_class = DecisionClass::kDigest;
    f.status = status;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      out = *tx.decisions().List(ws_.id, f, 100);
                      return Status::Ok();
                    })
                    .ok());
    return out;
  }

  testing::TempStore store_;
  FixedClock clock_{At("2026-06-10T16:00:00Z")};
  Workspace ws_;
};

TEST_F(TellThePerson, DigestListsTheDaysItemsWithWhyAndTheDraftsWaiting) {
  Ingest(R"({"type":"entity","name":"Marcus Webb","identifiers":["marcus@h.example"]}
{"type":"episode","kind":"message_received","occurred_at":"2026-06-10T10:00:00Z","counterparty":"dana@new.example","subject":"Partnership idea","summary":"Dana: partnership idea","external_id":"d1"})");
  ActionResult draft = Draft("marcus@h.example");
  ASSERT_EQ(draft.outcome, ActionOutcome::kPendingApproval);

  EXPECT_EQ(Compose("2026-06-10T16:59:00Z"), 0);  // yesterday's time is 24 h gone
  EXPECT_TRUE(Digests().empty());
  EXPECT_EQ(Compose("2026-06-10T17:01:00Z"), 1);

  std::vector<Decision> digests = Digests();
  ASSERT_EQ(digests.size(), 1u);
  EXPECT_EQ(digests[0].status, DecisionStatus::kPending);
  json details = digests[0].Details();
  EXPECT_EQ(details["day"], "2026-06-10");
  ASSERT_EQ(details["items"].size(), 1u);
  EXPECT_EQ(details["items"][0]["subject"], "Partnership idea");
  EXPECT_FALSE(details["items"][0]["why"].get<std::string>().empty());
  ASSERT_EQ(details["approvals"].size(), 1u);
  EXPECT_EQ(details["approvals"][0]["decision_id"], draft.decision_id);

  std::vector<OutboxItem> queued = Outbox(OutboxKind::kDigest);
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_EQ(queued[0].id, digests[0].id);
  EXPECT_EQ(queued[0].recipient, "me");
  const std::string& text = queued[0].body;
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "Your Cortex digest for 2026-06-10: 1 message, 1 draft waits for your approval");
  EXPECT_NE(text.find("Partnership idea"), std::string::npos) << text;
  EXPECT_NE(text.find("Why: "), std::string::npos) << text;
  EXPECT_NE(text.find("To Marcus Webb (marcus@h.example)"), std::string::npos) << text;

  // Once a day: not again this minute, later today, or after a restart.
  EXPECT_EQ(Compose("2026-06-10T17:02:00Z"), 0);
  store_.Reopen();
  EXPECT_EQ(Compose("2026-06-10T23:00:00Z"), 0);
  EXPECT_EQ(Digests().size(), 1u);

  // Delivered through the delivery connector, the digest decision says so.
  Receiver connector;
  DeliveryConfig config;
  Dispatcher dispatcher(*store_, clock_, connector, config);
  ASSERT_EQ(*dispatcher.RunOnce(clock_.Now()), 1);
  ASSERT_EQ(connector.got.size(), 1u);
  EXPECT_EQ(connector.got[0].kind, OutboxKind::kDigest);
  EXPECT_EQ(connector.got[0].body, text);
  EXPECT_EQ(Digests(DecisionStatus::kDelivered).size(), 1u);
  EXPECT_TRUE(Digests(DecisionStatus::kPending).empty());
}

TEST_F(TellThePerson, NoDigestIsSentWithoutADigestTo) {
  ASSERT_TRUE(ImportRules(*store_, clock_, ws_.id, "rules:\n").ok());
  Ingest(
      R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-10T10:00:00Z","counterparty":"dana@new.example","subject":"Partnership idea","summary":"Dana: partnership idea","external_id":"d1"})");
  EXPECT_EQ(Compose("2026-06-10T17:01:00Z"), 0);
  EXPECT_TRUE(Digests().empty());
}

TEST_F(TellThePerson, ADayWithNothingSendsNothingAndStaysSettled) {
  EXPECT_EQ(Compose("2026-06-10T17:00:00Z"), 0);
  // A draft made after the digest time waits for tomorrow's digest.
  Ingest(R"({"type":"entity","name":"Marcus Webb","identifiers":["marcus@h.example"]})");
  Draft("marcus@h.example");
  EXPECT_EQ(Compose("2026-06-10T17:05:00Z"), 0);
  EXPECT_TRUE(Digests().empty());
  EXPECT_EQ(Compose("2026-06-11T17:00:00Z"), 1);
}

TEST_F(TellThePerson, AMissedDigestIsSentWithinTwelveHoursAndItsItemsCarryOver) {
  auto message = [](const char* at, const char* from, const char* subject) {
    return std::string(R"({"type":"episode","kind":"message_received","occurred_at":")") + at +
           R"(","counterparty":")" + from + R"(","subject":")" + subject +
           R"(","summary":"a message","external_id":")" + subject + "\"}";
  };
  Ingest(message("2026-06-09T10:00:00Z", "cy@new.example", "Welcome"));
  ASSERT_EQ(Compose("2026-06-09T17:01:00Z"), 1);
  Ingest(message("2026-06-10T10:00:00Z", "dana@new.example", "Partnership idea"));
  EXPECT_EQ(Compose("2026-06-11T05:01:00Z"), 0);  // 12 h 1 min late: that day's is not sent
  // The next day's digest carries what waited for the missed one.
  Ingest(message("2026-06-11T10:00:00Z", "eli@new.example", "Speaking slot"));
  ASSERT_EQ(Compose("2026-06-11T17:00:00Z"), 1);
  json items = Digests()[0].Details()["items"];  // newest digest first
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0]["subject"], "Partnership idea");
  EXPECT_EQ(items[1]["subject"], "Speaking slot");
  // ...and the day after starts where that one ended.
  Ingest(message("2026-06-12T10:00:00Z", "fay@new.example", "Intro"));
  ASSERT_EQ(Compose("2026-06-12T17:00:00Z"), 1);
  items = Digests()[0].Details()["items"];
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["subject"], "Intro");
}

TEST_F(TellThePerson, DigestGoesToTheSettingsAddressAndFailsVisibly) {
  ASSERT_TRUE(
      ImportRules(*store_, clock_, ws_.id, "rules:\nsettings:\n  digest_to: \"me@alpha.example\"\n")
          .ok());
  Ingest(
      R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-10T10:00:00Z","counterparty":"dana@new.example","subject":"Partnership idea","summary":"Dana: partnership idea","external_id":"d1"})");
  ASSERT_EQ(Compose("2026-06-10T17:00:00Z"), 1);
  EXPECT_EQ(Outbox(OutboxKind::kDigest)[0].recipient, "me@alpha.example");
  Receiver connector;
  connector.down = true;
  DeliveryConfig config;
  config.max_attempts = 1;
  Dispatcher dispatcher(*store_, clock_, connector, config);
  EXPECT_EQ(*dispatcher.RunOnce(clock_.Now()), 0);
  EXPECT_EQ(Digests(DecisionStatus::kFailed).size(), 1u);
}

TEST_F(TellThePerson, FreshInterruptsAndLevelOneDraftsArePushed) {
  ASSERT_TRUE(ImportRules(*store_, clock_, ws_.id, R"(
rules:
  - name: sarah-interrupts
    summary: Interrupt for Sarah.
    when: { counterparty: sarah@n.example }
    then: { triage: interrupt_now }
)")
                  .ok());
  Ingest(R"({"type":"entity","name":"Sarah Chen","identifiers":["sarah@n.example"]}
{"type":"entity","name":"Marcus Webb","identifiers":["marcus@h.example"]}
{"type":"episode","kind":"message_received","occurred_at":"2026-06-10T15:55:00Z","counterparty":"sarah@n.example","subject":"Board deck now","summary":"Sarah: board deck","external_id":"s1"}
{"type":"episode","kind":"message_received","occurred_at":"2026-06-07T15:55:00Z","counterparty":"sarah@n.example","subject":"Old news","summary":"Sarah: old news","external_id":"s0"})");
  std::vector<OutboxItem> events = Outbox(OutboxKind::kEvent);
  ASSERT_EQ(events.size(), 1u);  // not the three-day-old one
  json e = json::parse(events[0].body);
  EXPECT_EQ(e["type"], "notification.created");
  EXPECT_EQ(e["id"], events[0].id);
  EXPECT_EQ(e["workspace_id"], ws_.id);
  EXPECT_EQ(e["data"]["counterparty"]["name"], "Sarah Chen");
  EXPECT_NE(e["data"]["summary"].get<std::string>().find("Board deck now"), std::string::npos);
  EXPECT_EQ(e["data"]["why"]["rule_summary"], "Interrupt for Sarah.");

  ActionResult draft = Draft("marcus@h.example");
  events = Outbox(OutboxKind::kEvent);
  ASSERT_EQ(events.size(), 2u);
  json a = json::parse(events[0].body);  // newest first
  EXPECT_EQ(a["type"], "approval.requested");
  EXPECT_EQ(a["data"]["decision_id"], draft.decision_id);
  EXPECT_EQ(a["data"]["draft"], draft.draft);
  EXPECT_EQ(a["data"]["recipient"], "marcus@h.example");

  // Without a push webhook the events wait; with one they are delivered.
  Receiver delivery, push;
  DeliveryConfig config;
  EXPECT_EQ(*Dispatcher(*store_, clock_, delivery, config).RunOnce(clock_.Now()), 0);
  EXPECT_EQ(*Dispatcher(*store_, clock_, delivery, config, &push).RunOnce(clock_.Now()), 2);
  EXPECT_EQ(push.got.size(), 2u);
  EXPECT_TRUE(delivery.got.empty());
  for (const OutboxItem& o : Outbox(OutboxKind::kEvent))
    EXPECT_EQ(o.status, OutboxStatus::kDelivered);
}

TEST_F(TellThePerson, AnEventNotPushedWithinTheHourIsGivenUp) {
  Ingest(R"({"type":"entity","name":"Marcus Webb","identifiers":["marcus@h.example"]})");
  Draft("marcus@h.example");
  clock_.Advance(kPushFreshness + std::chrono::minutes(1));
  Receiver delivery, push;
  DeliveryConfig config;
  EXPECT_EQ(*Dispatcher(*store_, clock_, delivery, config, &push).RunOnce(clock_.Now()), 0);
  EXPECT_TRUE(push.got.empty());
  std::vector<OutboxItem> events = Outbox(OutboxKind::kEvent);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].status, OutboxStatus::kFailed);
  EXPECT_NE(events[0].last_error.find("given up"), std::string::npos);
}

TEST_F(TellThePerson, AutonomousSendsAskForNoApproval) {
  Ingest(R"({"type":"entity","name":"Marcus Webb","identifiers":["marcus@h.example"]})");
  ActionConfig config;
  config.trust.default_level = 3;
  CommunicateRequest req;
  req.to = "marcus@h.example";
  req.message = "Thanks!";
  auto r = ActionEngine(*store_, clock_, config).Communicate(ws_.id, req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, ActionOutcome::kSuccess);
  EXPECT_TRUE(Outbox(OutboxKind::kEvent).empty());
}

}  // namespace
}  // namespace cortex
