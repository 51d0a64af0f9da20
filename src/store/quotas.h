// The quotas area: tool calls counted per minute and day, inference units spent per day,
// and a workspace's overrides of the configured limits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "store/model.h"
#include "store/tx.h"

namespace cortex {

class QuotasReader {
 public:
  explicit QuotasReader(TxState& s) : s_(s) {}
  // Inference units spent on local day `day` (YYYY-MM-DD) by workspace `ws` in all and by
  // its token `token_id`.
  struct InferenceUse {
    int64_t workspace = 0;
    int64_t token = 0;
  };
  Result<InferenceUse> InferenceUnits(const std::string& ws, const std::string& token_id,
                                      const std::string& day);
  // The workspace's quota overrides (name, value), by name.
  Result<std::vector<std::pair<std::string, int64_t>>> Overrides(const std::string& ws);

 protected:
  TxState& s_;
};

class QuotasWriter : public QuotasReader {
 public:
  using QuotasReader::QuotasReader;
  Status AddInferenceUnits(const std::string& ws, const std::string& token_id,
                           const std::string& day, int64_t units);
  // Sets quota `name` for `ws`, or removes the override (back to the default) if nullopt.
  Status SetOverride(const std::string& ws, const std::string& name, std::optional<int64_t> value);
  // Counts one call of `token_id` in `ws` in minute `minute` and local day `day`, and
  // returns the counts including it. Locks only the four counters, not the workspace, so
  // counting never waits behind a long write to the workspace.
  Result<CallCounts> CountCall(const std::string& ws, const std::string& token_id, int64_t minute,
                               int64_t day);
  // Forgets call counts of minutes before `minute` and days before `day`, in every
  // workspace.
  Status DeleteCallCountsBefore(int64_t minute, int64_t day);
};

inline QuotasReader ReadTx::quotas() const { return QuotasReader(s_); }
inline QuotasWriter WriteTx::quotas() const { return QuotasWriter(s_); }

}  // namespace cortex
