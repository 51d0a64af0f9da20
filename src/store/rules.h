// The rules area: a workspace's triage and action rules, in force or retired.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/model.h"
#include "store/tx.h"

namespace cortex {

class RulesReader {
 public:
  explicit RulesReader(TxState& s) : s_(s) {}
  // Rules in `ws`; with `active_only`, only those in force. Active ones first, then by
  // position and id.
  Result<std::vector<Rule>> List(const std::string& ws, bool active_only);
  Result<Rule> Get(const std::string& ws, const std::string& rule_id);

 protected:
  TxState& s_;
};

class RulesWriter : public RulesReader {
 public:
  using RulesReader::RulesReader;
  Status Insert(const Rule& r);
  // Rewrites a rule's summary, definition, evidence, counts, status and learned fields (the
  // learner's and a person's accept/reject); `active` follows `status`. `retired_at` is kept
  // if already set.
  Status Update(const Rule& r, std::optional<TimePoint> retired_at);
  Status Retire(const std::string& ws, const std::string& rule_id, TimePoint at);
  Status SetPosition(const std::string& ws, const std::string& rule_id, int position);
  Status AddHits(const std::string& ws, const std::string& rule_id, int64_t n);
};

inline RulesReader ReadTx::rules() const { return RulesReader(s_); }
inline RulesWriter WriteTx::rules() const { return RulesWriter(s_); }

}  // namespace cortex
