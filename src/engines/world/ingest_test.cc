#include "engines/world/ingest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "core/limits.h"
#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/world/demo_world.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/episodes.h"
#include "store/migrations.h"
#include "store/notifications.h"
#include "store/workspaces.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

class IngestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ws = EnsureWorkspace(*store_, clock_, "alpha");
    ASSERT_TRUE(ws.ok());
    ws_ = *ws;
  }

  WorldCounts Counts() {
    WorldCounts c;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      c = *tx.workspaces().Counts(ws_.id);
                      return Status::Ok();
                    })
                    .ok());
    return c;
  }

  std::string WorldVersion() {
    std::string wv;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      wv = tx.workspaces().Get(ws_.id)->world_version;
                      return Status::Ok();
                    })
                    .ok());
    return wv;
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-10T09:00:00Z")};
  Workspace ws_;
};

constexpr char kGood[] =
    R"({"type":"entity","name":"Sarah Chen","identifiers":["Sarah@Northwind.example","@SarahC"],"tags":["vip","internal"]}
{"type":"episode","kind":"message_received","occurred_at":"2026-06-10T08:55:00Z","counterparty":"sarah@northwind.example","subject":"Q3","summary":"Sarah: 'Can we talk?'","thread":"t1","external_id":"x-1"}
{"type":"episode","kind":"calendar_block","occurred_at":"2026-06-10T09:00:00Z","ends_at":"2026-06-10T11:00:00Z","subject":"deep work","summary":"Focus block"}
)";

TEST_F(IngestTest, AcceptsAGoodBatchAndMovesTheWorldVersion) {
  std::string before = WorldVersion();
  auto report = IngestJsonl(*store_, clock_, ws_.id, kGood);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->lines, 3u);
  EXPECT_EQ(report->episodes_added, 2u);
  EXPECT_EQ(report->entities_added, 1u);
  EXPECT_NE(report->world_version, before);
  EXPECT_EQ(WorldVersion(), report->world_version);
  EXPECT_EQ(Counts().episodes, 2);

  // Identifiers are normalised: the entity is found by any spelling.
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    auto e = tx.entities().FindByIdentifier(ws_.id, "@sarahc");
                    EXPECT_TRUE(e.ok());
                    EXPECT_EQ(e->tags, (std::vector<std::string>{"internal", "vip"}));
                    return Status::Ok();
                  })
                  .ok());
}

TEST_F(IngestTest, ABadLineRefusesTheWholeBatch) {
  std::string before = WorldVersion();
  std::string batch = kGood;
  batch +=
      R"({"type":"episode","kind":"message_received","occurred_at":"yesterday","counterparty":"a@b.example","summary":"x"})";
  auto report = IngestJsonl(*store_, clock_, ws_.id, batch);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(report.status().message().rfind("line 4: field 'occurred_at':", 0), 0u)
      << report.status().message();
  EXPECT_EQ(Counts().episodes, 0);
  EXPECT_EQ(Counts().entities, 0);
  EXPECT_EQ(WorldVersion(), before);
}

// More messages than the triager holds before it stores their decisions (4,000), from
// counterparties in turn. A batch that fails after the first of those stores leaves nothing;
// the same batch without its bad line gives every message its decision and notification, in
// the order of the lines, each triaged against the lines before it.
TEST_F(IngestTest, ABatchBiggerThanTheHeldDecisionsTriagesEveryLineOrNone) {
  constexpr int kMessages = 4500, kPeople = 30;
  std::string batch;
  for (int i = 0; i < kMessages; ++i) {
    batch += R"({"type":"episode","kind":"message_received","occurred_at":")" +
             FormatTime(clock_.Now() - std::chrono::minutes(kMessages - i)) +
             R"(","counterparty":"p)" + std::to_string(i % kPeople) +
             R"(@x.example","summary":"m)" + std::to_string(i) + "\"}\n";
  }
  auto failed = IngestJsonl(
      *store_, clock_, ws_.id,
      batch +
          R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-10T08:59:00Z","counterparty":"entity_01J0000000000000000000000Z","summary":"x"})");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message().rfind("line 4501: field 'counterparty': no entity", 0), 0u)
      << failed.status().message();
  EXPECT_EQ(Counts().episodes, 0);

  auto report = IngestJsonl(*store_, clock_, ws_.id, batch);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->triaged, static_cast<size_t>(kMessages));
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    DecisionFilter triage;
                    triage.decision_class = DecisionClass::kTriage;
                    auto decisions = tx.decisions().List(ws_.id, triage, 2 * kMessages);
                    EXPECT_TRUE(decisions.ok());
                    EXPECT_EQ(decisions->size(), static_cast<size_t>(kMessages));
                    std::reverse(decisions->begin(), decisions->end());  // oldest first
                    for (int i = 0; i < static_cast<int>(decisions->size()); ++i) {
                      const Decision& d = (*decisions)[i];
                      auto ep = tx.episodes().Get(ws_.id, d.source_episode_ids.at(0));
                      EXPECT_TRUE(ep.ok());
                      EXPECT_EQ(ep->summary, "m" + std::to_string(i));
                      auto n = tx.notifications().Get(ws_.id, d.notification_id.value_or(""));
                      EXPECT_TRUE(n.ok());
                      EXPECT_EQ(n->decision_id, d.id);
                      EXPECT_EQ(n->episode_id, ep->id);
                      bool first_contact = false;
                      nlohmann::json details = d.Details();
                      for (const auto& s : details["signals"]) {
                        first_contact |= s["kind"] == "first_contact";
                      }
                      EXPECT_EQ(first_contact, i < kPeople) << "message " << i;
                      if (::testing::Test::HasFailure()) break;
                    }
                    return Status::Ok();
                  })
                  .ok());
}

// A batch larger than a step (limits::kIngestLinesPerStep) that fails in its last step
// leaves the world as it was: the entity its first line renamed and tagged, the people and
// messages its earlier steps added, the version.
TEST_F(IngestTest, ALargeBatchThatFailsLateLeavesTheWorldAsItWas) {
  ASSERT_TRUE(IngestJsonl(*store_, clock_, ws_.id, kGood).ok());
  const std::string version = WorldVersion();
  const WorldCounts before = Counts();
  std::string batch =
      R"({"type":"entity","name":"Sarah C.","identifiers":["sarah@northwind.example","sc@home.example"],"tags":["family"]})"
      "\n";
  const int kMessages = static_cast<int>(3 * limits::kIngestLinesPerStep);
  for (int i = 0; i < kMessages; ++i) {
    batch += R"({"type":"episode","kind":"message_received","occurred_at":")" +
             FormatTime(clock_.Now() - std::chrono::minutes(kMessages - i)) +
             R"(","counterparty":"q)" + std::to_string(i % 50) + R"(@y.example","summary":"m"})" +
             "\n";
  }
  batch +=
      R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-10T08:59:00Z","counterparty":"entity_01J0000000000000000000000Z","summary":"x"})";
  auto failed = IngestJsonl(*store_, clock_, ws_.id, batch);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(failed.status().message().rfind("line " + std::to_string(kMessages + 2) + ": ", 0), 0u)
      << failed.status().message();
  EXPECT_EQ(WorldVersion(), version);
  const WorldCounts after = Counts();
  EXPECT_EQ(after.episodes, before.episodes);
  EXPECT_EQ(after.entities, before.entities);
  ASSERT_TRUE(
      store_
          ->Read([&](ReadTx& tx) {
            auto sarah = tx.entities().FindByIdentifier(ws_.id, "sarah@northwind.example");
            EXPECT_TRUE(sarah.ok());
            EXPECT_EQ(sarah->name, "Sarah Chen");
            EXPECT_EQ(sarah->tags, (std::vector<std::string>{"internal", "vip"}));
            EXPECT_EQ(tx.entities().FindByIdentifier(ws_.id, "sc@home.example").status().code(),
                      Code::kNotFound);
            EXPECT_EQ(tx.entities().FindByIdentifier(ws_.id, "q1@y.example").status().code(),
                      Code::kNotFound);
            return Status::Ok();
          })
          .ok());
}

std::string MessagesBatch(int n, const Clock& clock) {
  std::string batch;
  for (int i = 0; i < n; ++i) {
    batch += R"({"type":"episode","kind":"message_sent","occurred_at":")" +
             FormatTime(clock.Now() - std::chrono::minutes(n - i)) + R"(","counterparty":"q)" +
             std::to_string(i % 50) + R"(@y.example","summary":"m","external_id":"m-)" +
             std::to_string(i) + "\"}\n";
  }
  return batch;
}

TEST_F(IngestTest, ALargeBatchReportsGrowingProgressUpToItsTotal) {
  const int n = static_cast<int>(4 * limits::kIngestLinesPerStep + 7);
  std::vector<std::pair<size_t, size_t>> told;
  IngestControl control;
  control.progress = [&](size_t done, size_t total) { told.emplace_back(done, total); };
  auto report = IngestJsonl(*store_, clock_, ws_.id, MessagesBatch(n, clock_), control);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->episodes_added, static_cast<size_t>(n));
  ASSERT_GE(told.size(), 2u);
  for (size_t i = 0; i < told.size(); ++i) {
    EXPECT_EQ(told[i].second, static_cast<size_t>(n));
    // Steps end by count or time: between two reports, at least kIngestProgressLines
    // lines (the last report, of the whole batch, may follow sooner).
    if (i > 0 && i + 1 < told.size()) {
      EXPECT_GE(told[i].first, told[i - 1].first + kIngestProgressLines);
    }
    if (i > 0) {
      EXPECT_GT(told[i].first, told[i - 1].first);
    }
  }
  EXPECT_EQ(told.back().first, static_cast<size_t>(n));
  EXPECT_EQ(Counts().episodes, static_cast<size_t>(n));
}

TEST_F(IngestTest, ACancelledBatchLeavesNothingOfIt) {
  ASSERT_TRUE(IngestJsonl(*store_, clock_, ws_.id, kGood).ok());
  const std::string version = WorldVersion();
  const WorldCounts before = Counts();
  const int n = static_cast<int>(4 * limits::kIngestLinesPerStep);
  int asked = 0;
  IngestControl control;
  // Stopped before its third step: two have committed by then.
  control.cancelled = [&] { return ++asked == 3; };
  auto report = IngestJsonl(*store_, clock_, ws_.id, MessagesBatch(n, clock_), control);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), Code::kCancelled) << report.status().message();
  EXPECT_EQ(asked, 3);
  EXPECT_EQ(WorldVersion(), version);
  EXPECT_EQ(Counts().episodes, before.episodes);
  EXPECT_EQ(Counts().entities, before.entities);
  // A small batch is asked once, before its one write.
  control.cancelled = [] { return true; };
  auto small = IngestJsonl(*store_, clock_, ws_.id, MessagesBatch(3, clock_), control);
  EXPECT_EQ(small.status().code(), Code::kCancelled);
  EXPECT_EQ(Counts().episodes, before.episodes);
  // Not cancelled: the same batch lands whole.
  control.cancelled = [] { return false; };
  auto landed = IngestJsonl(*store_, clock_, ws_.id, MessagesBatch(n, clock_), control);
  ASSERT_TRUE(landed.ok());
  EXPECT_EQ(Counts().episodes, before.episodes + n);
}

TEST_F(IngestTest, ErrorsNameTheLineAndField) {
  struct Case {
    const char* line;
    const char* expected_prefix;
  };
  const Case cases[] = {
      {"not json", "line 1: not valid JSON"},
      {"[1]", "line 1: expected a JSON object"},
      {R"({"type":"meeting"})", "line 1: field 'type'"},
      {R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-10T08:55:00Z","summary":"x"})",
       "line 1: field 'counterparty': required"},
      {R"({"type":"episode","kind":"tweet","occurred_at":"2026-06-10T08:55:00Z","summary":"x","counterparty":"a@b.example"})",
       "line 1: field 'kind'"},
      {R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-10T08:55:00Z","summary":"x","counterparty":"not-an-address"})",
       "line 1: field 'counterparty'"},
      {R"({"type":"episode","kind":"calendar_block","occurred_at":"2026-06-10T09:00:00Z","summary":"x"})",
       "line 1: field 'ends_at': required"},
      {R"({"type":"episode","kind":"calendar_block","occurred_at":"2026-06-10T09:00:00Z","ends_at":"2026-06-10T08:00:00Z","summary":"x"})",
       "line 1: field 'ends_at': must be after"},
      {R"({"type":"entity","name":"X","identifiers":[]})", "line 1: field 'identifiers'"},
      {R"({"type":"entity","name":"X","identifiers":["x@y.example"],"mood":"happy"})", "line 1:"},
      {R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-10T08:55:00Z","summary":"x","counterparty":"entity_01M8PS06M053VVFGPPNAWWM0AA"})",
       "line 1: field 'counterparty': no entity"},
  };
  for (const Case& c : cases) {
    auto report = IngestJsonl(*store_, clock_, ws_.id, c.line);
    ASSERT_FALSE(report.ok()) << c.line;
    EXPECT_EQ(report.status().message().rfind(c.expected_prefix, 0), 0u)
        << c.line << " -> " << report.status().message();
    // The same line as an item of episode.ingest's `lines`: the same error.
    nlohmann::json item = nlohmann::json::parse(c.line, nullptr, /*allow_exceptions=*/false);
    if (item.is_discarded()) continue;
    auto as_item = IngestObjects(*store_, clock_, ws_.id, nlohmann::json::array({item}), {});
    ASSERT_FALSE(as_item.ok()) << c.line;
    EXPECT_EQ(as_item.status().message(), report.status().message());
  }
  EXPECT_EQ(Counts().episodes, 0);
}

// episode.ingest's items are read as parsed, as the lines of a JSONL batch are: the same
// report, and a bad item N refuses the batch as "line N".
TEST_F(IngestTest, ParsedLinesIngestAsTheirTextDoes) {
  nlohmann::json items = nlohmann::json::array();
  std::string text = kGood;
  for (size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1) {
    items.push_back(nlohmann::json::parse(text.substr(at, end - at)));
  }
  nlohmann::json bad = items;
  bad.push_back({{"type", "episode"},
                 {"kind", "message_received"},
                 {"occurred_at", "yesterday"},
                 {"counterparty", "a@b.example"},
                 {"summary", "x"}});
  auto refused = IngestObjects(*store_, clock_, ws_.id, bad, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message().rfind("line 4: field 'occurred_at':", 0), 0u)
      << refused.status().message();
  EXPECT_EQ(Counts().episodes, 0);

  auto report = IngestObjects(*store_, clock_, ws_.id, items, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->lines, 3u);
  EXPECT_EQ(report->episodes_added, 2u);
  EXPECT_EQ(report->entities_added, 1u);
  EXPECT_EQ(WorldVersion(), report->world_version);
  // The same lines again as text: all duplicates, nothing more stored.
  auto again = IngestJsonl(*store_, clock_, ws_.id, kGood);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->duplicates, 1u);  // the calendar block has no external_id
  EXPECT_EQ(IngestObjects(*store_, clock_, ws_.id, nlohmann::json::array(), {}).status().code(),
            Code::kInvalidArgument);
}

// A connector's typed items meet the checks a line meets: a bad one refuses the batch as
// "item N" and nothing is written, the cursor (`also`) included; good ones land as lines do.
TEST_F(IngestTest, TypedItemsAreCheckedAsLinesAreAndCommitWithTheCursor) {
  auto episode = [](std::string counterparty, std::string summary) {
    IncomingEpisode ep;
    ep.episode.kind = "message_received";
    ep.episode.occurred_at = *ParseTime("2026-06-10T08:55:00Z");
    ep.episode.channel = "email";
    ep.episode.summary = std::move(summary);
    ep.episode.external_id = "typed-" + counterparty;
    ep.counterparty = std::move(counterparty);
    return ep;
  };
  int cursors = 0;
  auto cursor = [&](WriteTx&) {
    ++cursors;
    return Status::Ok();
  };
  struct Case {
    IngestItem item;
    const char* expected_prefix;
  };
  IncomingEpisode block = episode("", "Focus");
  block.episode.kind = "calendar_block";
  IncomingEpisode tweet = episode("a@b.example", "x");
  tweet.episode.kind = "tweet";
  IncomingEpisode far = episode("a@b.example", "x");
  far.episode.occurred_at = *ParseTime("2026-06-10T08:55:00Z") + std::chrono::hours(24 * 366 * 200);
  IncomingEpisode bad_utf8 = episode("a@b.example", "x");
  bad_utf8.episode.subject = "caf\xC3";
  const Case cases[] = {
      {episode("Sarah@Northwind.example", "x"), "item 2: field 'counterparty'"},
      {episode("a@b.example", ""), "item 2: field 'summary'"},
      {episode("a@b.example", std::string(limits::kMaxSummaryChars + 1, 'x')),
       "item 2: field 'summary'"},
      {episode("", "x"), "item 2: field 'counterparty': required"},
      {block, "item 2: field 'ends_at': required"},
      {tweet, "item 2: field 'kind'"},
      {far, "item 2: field 'occurred_at'"},
      {bad_utf8, "item 2: field 'subject': not UTF-8"},
      {IncomingEntity{"", "person", {"x@y.example"}, {}}, "item 2: field 'name'"},
      {IncomingEntity{"X", "person", {}, {}}, "item 2: field 'identifiers'"},
      {IncomingEntity{"X", "person", {"x@y.example"}, {"VIP"}}, "item 2: field 'tags'"},
  };
  for (const Case& c : cases) {
    std::vector<IngestItem> items{episode("ok@b.example", "fine"), c.item};
    auto report = IngestItems(*store_, clock_, ws_.id, std::move(items), cursor);
    ASSERT_FALSE(report.ok()) << c.expected_prefix;
    EXPECT_EQ(report.status().message().rfind(c.expected_prefix, 0), 0u)
        << report.status().message();
  }
  EXPECT_EQ(Counts().episodes, 0);
  EXPECT_EQ(cursors, 0);

  std::vector<IngestItem> items{
      IncomingEntity{"Sarah Chen",
                     "person",
                     {"sarah@northwind.example", "sarah@northwind.example"},
                     {"vip", "internal", "vip"}},
      episode("sarah@northwind.example", "Sarah: 'Can we talk?'")};
  auto report = IngestItems(*store_, clock_, ws_.id, std::move(items), cursor);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->entities_added, 1u);
  EXPECT_EQ(report->episodes_added, 1u);
  EXPECT_EQ(report->triaged, 1u);
  EXPECT_EQ(cursors, 1);
  Entity sarah;
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    auto e = tx.entities().FindByIdentifier(ws_.id, "sarah@northwind.example");
                    if (!e.ok()) return e.status();
                    sarah = *e;
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(sarah.name, "Sarah Chen");
  EXPECT_EQ(sarah.identifiers.size(), 1u);
  EXPECT_EQ(sarah.tags, (std::vector<std::string>{"internal", "vip"}));
  // Nothing but a cursor to move: allowed, as a connector's pass over an unchanged folder.
  auto empty = IngestItems(*store_, clock_, ws_.id, {}, cursor);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(cursors, 2);
  EXPECT_EQ(empty->world_version, report->world_version);
}

TEST_F(IngestTest, EmptyBatchIsRefused) {
  EXPECT_EQ(IngestJsonl(*store_, clock_, ws_.id, "\n  \n").status().code(), Code::kInvalidArgument);
}

TEST_F(IngestTest, ExternalIdsDedupeAndAnUnchangedWorldKeepsItsVersion) {
  ASSERT_TRUE(IngestJsonl(*store_, clock_, ws_.id, kGood).ok());
  std::string wv = WorldVersion();
  auto again =
      IngestJsonl(*store_, clock_, ws_.id,
                  R"({"type":"entity","name":"Sarah Chen","identifiers":["@sarahc"],"tags":["vip"]}
{"type":"episode","kind":"message_received","occurred_at":"2026-06-10T08:55:00Z","counterparty":"@sarahc","summary":"dup","external_id":"x-1"})");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->duplicates, 1u);
  EXPECT_EQ(again->episodes_added, 0u);
  EXPECT_EQ(again->entities_updated, 0u);
  EXPECT_EQ(again->world_version, wv);
  EXPECT_EQ(WorldVersion(), wv);
}

TEST_F(IngestTest, FirstContactCreatesAnEntity) {
  auto report = IngestJsonl(
      *store_, clock_, ws_.id,
      R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-10T08:55:00Z","counterparty":"New.Person@Elsewhere.example","summary":"Hello"})");
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->entities_added, 1u);
  ASSERT_TRUE(
      store_
          ->Read([&](ReadTx& tx) {
            EXPECT_TRUE(
                tx.entities().FindByIdentifier(ws_.id, "new.person@elsewhere.example").ok());
            return Status::Ok();
          })
          .ok());
}

TEST_F(IngestTest, MergesEntitiesAndRefusesIdentifierConflicts) {
  ASSERT_TRUE(IngestJsonl(*store_, clock_, ws_.id, kGood).ok());
  auto merged = IngestJsonl(
      *store_, clock_, ws_.id,
      R"({"type":"entity","name":"Sarah C.","identifiers":["@sarahc","+1 (555) 010-2030"],"tags":["board"]})");
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(merged->entities_updated, 1u);
  ASSERT_TRUE(
      IngestJsonl(*store_, clock_, ws_.id,
                  R"({"type":"entity","name":"Marcus","identifiers":["marcus@acme.example"]})")
          .ok());
  auto conflict = IngestJsonl(
      *store_, clock_, ws_.id,
      R"({"type":"entity","name":"Both","identifiers":["@sarahc","marcus@acme.example"]})");
  ASSERT_FALSE(conflict.ok());
  EXPECT_NE(conflict.status().message().find("already belongs to another entity"),
            std::string::npos);
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    auto e = tx.entities().FindByIdentifier(ws_.id, "+15550102030");
                    EXPECT_TRUE(e.ok());
                    EXPECT_EQ(e->name, "Sarah C.");
                    return Status::Ok();
                  })
                  .ok());
}

TEST_F(IngestTest, WorkspacesDoNotSeeEachOther) {
  ASSERT_TRUE(IngestJsonl(*store_, clock_, ws_.id, kGood).ok());
  auto beta = EnsureWorkspace(*store_, clock_, "beta");
  ASSERT_TRUE(beta.ok());
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    EXPECT_EQ(tx.entities().FindByIdentifier(beta->id, "@sarahc").status().code(),
                              Code::kNotFound);
                    EXPECT_EQ(tx.workspaces().Counts(beta->id)->episodes, 0);
                    return Status::Ok();
                  })
                  .ok());
  // The same external id in another workspace is not a duplicate.
  auto report = IngestJsonl(*store_, clock_, beta->id, kGood);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->duplicates, 0u);
}

TEST_F(IngestTest, AWriteThatThrowsRollsBackAndReleasesTheLock) {
  EXPECT_THROW((void)store_->Write([&](WriteTx& tx) -> Status {
    CORTEX_RETURN_IF_ERROR(tx.workspaces().SetWorldVersion(ws_.id, "wv_half_written"));
    throw std::runtime_error("boom");
  }),
               std::runtime_error);
  EXPECT_NE(WorldVersion(), "wv_half_written");
  // The writer is usable again at once.
  EXPECT_TRUE(IngestJsonl(*store_, clock_, ws_.id, kGood).ok());
}

TEST_F(IngestTest, SurvivesReopen) {
  auto report = IngestJsonl(*store_, clock_, ws_.id, kGood);
  ASSERT_TRUE(report.ok());
  store_.Reopen();
  EXPECT_EQ(Counts().episodes, 2);
  EXPECT_EQ(WorldVersion(), report->world_version);
  EXPECT_EQ(*store_->SchemaVersion(), Migrations().back().number);
}

TEST_F(IngestTest, TheDemoWorldIngestsCleanlyAndIdempotently) {
  auto first = IngestJsonl(*store_, clock_, ws_.id, DemoWorldJsonl());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_GT(first->episodes_added, 0u);
  auto second = IngestJsonl(*store_, clock_, ws_.id, DemoWorldJsonl());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->episodes_added, 0u);
  EXPECT_EQ(second->world_version, first->world_version);
}

}  // namespace
}  // namespace cortex
