#include "engines/auth/quotas.h"

#include <gtest/gtest.h>

#include "core/time.h"
#include "engines/auth/tokens.h"
#include "store/quotas.h"
#include "store/workspaces.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

TimePoint At(const char* rfc3339) { return *ParseTime(rfc3339); }

QuotaLimits Wide() {
  QuotaLimits q;
  q.calls_per_minute = q.calls_per_day = 1000;
  q.token_calls_per_minute = q.token_calls_per_day = 1000;
  return q;
}

// The counters under test: in memory, or in a store (as with several instances on
// PostgreSQL), where the workspaces must exist.
class Counter {
 public:
  Counter(const Clock& clock, bool in_store) : quotas_(clock, in_store ? &*store_ : nullptr) {
    for (const char* id : {"ws_a", "ws_b"}) {
      EXPECT_TRUE(store_
                      ->Write([&](WriteTx& tx) {
                        return tx.workspaces().Insert(
                            Workspace{id, id, "wv_0", "av_0", At("2026-06-01T00:00:00Z")});
                      })
                      .ok());
    }
  }
  std::optional<QuotaExceeded> Admit(const std::string& ws, const std::string& token,
                                     const QuotaLimits& limits, int utc_offset_minutes) {
    auto r = quotas_.Admit(ws, token, limits, utc_offset_minutes);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::nullopt;
  }

 private:
  testing::TempStore store_;
  CallQuotas quotas_;
};

class CallQuotasTest : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(InMemoryAndInStore, CallQuotasTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Store" : "Memory"; });

TEST_P(CallQuotasTest, TokenMinuteWindowRefusesThenResetsAtTheNextMinute) {
  FixedClock clock(At("2026-06-10T09:00:45Z"));
  Counter quotas(clock, GetParam());
  QuotaLimits q = Wide();
  q.token_calls_per_minute = 3;
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(quotas.Admit("ws_a", "tok_1", q, 0)) << i;
  auto over = quotas.Admit("ws_a", "tok_1", q, 0);
  ASSERT_TRUE(over);
  EXPECT_EQ(over->quota, "token_calls_per_minute");
  EXPECT_EQ(over->limit, 3);
  EXPECT_EQ(over->retry_after_s, 15);  // 09:00:45 -> 09:01:00
  EXPECT_NE(over->Message("x").find("token_calls_per_minute (3)"), std::string::npos);
  // Another token of the same workspace is not held back by this one's limit.
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_2", q, 0));
  clock.Set(At("2026-06-10T09:00:59.999Z"));
  EXPECT_TRUE(quotas.Admit("ws_a", "tok_1", q, 0));
  clock.Set(At("2026-06-10T09:01:00Z"));
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_1", q, 0));
}

TEST_P(CallQuotasTest, WorkspaceLimitCountsAllItsTokensAndNoOtherWorkspace) {
  FixedClock clock(At("2026-06-10T09:00:00Z"));
  Counter quotas(clock, GetParam());
  QuotaLimits q = Wide();
  q.calls_per_minute = 4;
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_1", q, 0));
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_2", q, 0));
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_1", q, 0));
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_3", q, 0));
  auto over = quotas.Admit("ws_a", "tok_4", q, 0);
  ASSERT_TRUE(over);
  EXPECT_EQ(over->quota, "calls_per_minute");
  EXPECT_FALSE(quotas.Admit("ws_b", "tok_9", q, 0));  // another workspace: its own count
}

TEST_P(CallQuotasTest, ARefusedCallCountsAgainstNothing) {
  FixedClock clock(At("2026-06-10T09:00:00Z"));
  Counter quotas(clock, GetParam());
  QuotaLimits q = Wide();
  q.token_calls_per_minute = 1;
  q.calls_per_minute = 3;
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_1", q, 0));
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(quotas.Admit("ws_a", "tok_1", q, 0));
  // tok_1's ten refusals did not use up the workspace: two more calls fit.
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_2", q, 0));
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_3", q, 0));
  EXPECT_TRUE(quotas.Admit("ws_a", "tok_4", q, 0));
}

TEST_P(CallQuotasTest, DayWindowResetsAtLocalMidnightNotUtcMidnight) {
  // UTC+2: local midnight is 22:00 UTC.
  FixedClock clock(At("2026-06-10T21:59:30Z"));
  Counter quotas(clock, GetParam());
  QuotaLimits q = Wide();
  q.calls_per_day = 2;
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_1", q, 120));
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_1", q, 120));
  auto over = quotas.Admit("ws_a", "tok_1", q, 120);
  ASSERT_TRUE(over);
  EXPECT_EQ(over->quota, "calls_per_day");
  EXPECT_EQ(over->retry_after_s, 30);
  clock.Set(At("2026-06-10T21:59:59Z"));
  EXPECT_TRUE(quotas.Admit("ws_a", "tok_1", q, 120));
  clock.Set(At("2026-06-10T22:00:00Z"));  // 00:00 local, June 11th
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_1", q, 120));
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_1", q, 120));
  // UTC midnight is not a reset for this workspace.
  clock.Set(At("2026-06-11T00:00:01Z"));
  over = quotas.Admit("ws_a", "tok_1", q, 120);
  ASSERT_TRUE(over);
  EXPECT_EQ(over->retry_after_s, 22 * 3600 - 1);
}

TEST_P(CallQuotasTest, WestOfUtcTheDayEndsAfterUtcMidnight) {
  // UTC-5: local midnight is 05:00 UTC.
  FixedClock clock(At("2026-06-11T04:59:00Z"));
  Counter quotas(clock, GetParam());
  QuotaLimits q = Wide();
  q.token_calls_per_day = 1;
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_1", q, -300));
  auto over = quotas.Admit("ws_a", "tok_1", q, -300);
  ASSERT_TRUE(over);
  EXPECT_EQ(over->quota, "token_calls_per_day");
  EXPECT_EQ(over->retry_after_s, 60);
  clock.Set(At("2026-06-11T05:00:00Z"));
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_1", q, -300));
}

TEST_P(CallQuotasTest, ASpentDayIsNamedBeforeASpentMinuteWhoeverSpentThem) {
  FixedClock clock(At("2026-06-10T12:00:30Z"));
  Counter quotas(clock, GetParam());
  QuotaLimits q = Wide();
  q.token_calls_per_minute = 2;
  q.calls_per_day = 2;
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_1", q, 0));
  EXPECT_FALSE(quotas.Admit("ws_a", "tok_1", q, 0));
  // tok_1's minute and the workspace's day are both spent: waiting 30 s would not help.
  auto over = quotas.Admit("ws_a", "tok_1", q, 0);
  ASSERT_TRUE(over);
  EXPECT_EQ(over->quota, "calls_per_day");
  EXPECT_EQ(over->retry_after_s, 12 * 3600 - 30);
}

TEST(LocalDayTest, NamesTheLocalDateAndTheSecondsLeft) {
  LocalDay d = LocalDayOf(At("2026-06-10T23:30:00Z"), 60);
  EXPECT_EQ(d.day, "2026-06-11");
  EXPECT_EQ(d.seconds_left, 23 * 3600 + 30 * 60);
  d = LocalDayOf(At("2026-06-10T02:00:00Z"), -180);
  EXPECT_EQ(d.day, "2026-06-09");
  EXPECT_EQ(d.seconds_left, 3600);
}

class InferenceQuotaTest : public ::testing::Test {
 protected:
  void SetUp() override { ws_ = *EnsureWorkspace(*store_, clock_, "alpha"); }

  std::optional<QuotaExceeded> Spend(const std::string& token) {
    std::optional<QuotaExceeded> out;
    Status st = store_->Write([&](WriteTx& tx) -> Status {
      auto r = SpendInferenceUnit(tx, ws_.id, token, defaults_, clock_.Now());
      if (!r.ok()) return r.status();
      out = *r;
      return Status::Ok();
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out;
  }

  testing::TempStore store_;
  FixedClock clock_{At("2026-06-10T12:00:00Z")};
  Workspace ws_;
  QuotaLimits defaults_;
};

TEST_F(InferenceQuotaTest, TokenAndWorkspaceBudgetsAreBothEnforcedAndResetDaily) {
  defaults_.inference_units_per_day = 3;
  defaults_.token_inference_units_per_day = 2;
  EXPECT_FALSE(Spend("tok_1"));
  EXPECT_FALSE(Spend("tok_1"));
  auto over = Spend("tok_1");
  ASSERT_TRUE(over);
  EXPECT_EQ(over->quota, "token_inference_units_per_day");
  EXPECT_EQ(over->retry_after_s, 12 * 3600);
  EXPECT_FALSE(Spend("tok_2"));  // the workspace's third unit
  over = Spend("tok_2");
  ASSERT_TRUE(over);
  EXPECT_EQ(over->quota, "inference_units_per_day");
  // Refusals spent nothing: the store holds 3 units, 2 of them tok_1's.
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) -> Status {
                    auto use = tx.quotas().InferenceUnits(ws_.id, "tok_1", "2026-06-10");
                    if (!use.ok()) return use.status();
                    EXPECT_EQ(use->workspace, 3);
                    EXPECT_EQ(use->token, 2);
                    return Status::Ok();
                  })
                  .ok());
  clock_.Set(At("2026-06-11T00:00:00Z"));
  EXPECT_FALSE(Spend("tok_1"));
}

TEST_F(InferenceQuotaTest, WorkspaceOverridesReplaceDefaultsAndDefaultRestoresThem) {
  defaults_.inference_units_per_day = 1;
  ASSERT_TRUE(store_
                  ->Write([&](WriteTx& tx) {
                    return tx.quotas().SetOverride(ws_.id, "inference_units_per_day", 2);
                  })
                  .ok());
  EXPECT_FALSE(Spend("tok_1"));
  EXPECT_FALSE(Spend("tok_1"));
  EXPECT_TRUE(Spend("tok_1"));
  ASSERT_TRUE(store_
                  ->Write([&](WriteTx& tx) {
                    return tx.quotas().SetOverride(ws_.id, "inference_units_per_day", std::nullopt);
                  })
                  .ok());
  QuotaLimits effective;
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) -> Status {
                    auto q = EffectiveQuotas(tx, ws_.id, defaults_);
                    if (!q.ok()) return q.status();
                    effective = *q;
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(effective.inference_units_per_day, 1);
  EXPECT_EQ(FindQuota("calls_per_minute")->value, &QuotaLimits::calls_per_minute);
  EXPECT_EQ(FindQuota("calls_per_hour"), nullptr);
}

}  // namespace
}  // namespace cortex
