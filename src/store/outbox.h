// The outbox area: the transactional outbox the dispatcher delivers from (messages, daily
// digests and pushed events), and what the built-in `outbox` connector delivered.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/model.h"
#include "store/tx.h"

namespace cortex {

class OutboxReader {
 public:
  explicit OutboxReader(TxState& s) : s_(s) {}
  // Rows of `kind`, of every workspace, ready for a delivery attempt at `t`, oldest first.
  Result<std::vector<OutboxItem>> Due(TimePoint t, OutboxKind kind, int limit);
  // A workspace's rows of `kind`, newest first (without next_attempt_at).
  Result<std::vector<OutboxItem>> List(const std::string& ws, OutboxKind kind, int limit);
  // Messages the built-in `outbox` connector delivered, oldest first.
  Result<std::vector<nlohmann::json>> ListDelivered(const std::string& ws);
  // Whether workspace `ws`'s digest of local day `day` (YYYY-MM-DD) was composed.
  Result<bool> DigestComposed(const std::string& ws, const std::string& day);
  // The digest time of `ws`'s latest composed digest, if any.
  Result<std::optional<TimePoint>> LastDigestAt(const std::string& ws);

 protected:
  TxState& s_;
};

class OutboxWriter : public OutboxReader {
 public:
  using OutboxReader::OutboxReader;
  Status Insert(const OutboxItem& item);
  // Takes a lease on row `seen` until `lease_until` if it is still pending, due at `now`,
  // not leased past `now`, and unchanged since `seen` was read (no other process has
  // attempted it meanwhile). Returns false otherwise.
  Result<bool> Lease(const OutboxItem& seen, TimePoint now, TimePoint lease_until);
  Status Update(const OutboxItem& item, std::optional<TimePoint> delivered_at);
  // Records a delivered row once per id (idempotent: false if already recorded).
  Result<bool> RecordDelivered(const OutboxItem& item, TimePoint at);
  // Claims local day `day`'s digest of `ws`, due at `digest_at`, for `decision_id` (empty:
  // nothing was sent). False if it was claimed before: by this process or another sharing
  // the store.
  Result<bool> ClaimDigest(const std::string& ws, const std::string& day, TimePoint digest_at,
                           const std::string& decision_id, TimePoint now);
  // Forgets pushed events created before `t`, delivered or not.
  Status DeleteEventsBefore(TimePoint t);
};

inline OutboxReader ReadTx::outbox() const { return OutboxReader(s_); }
inline OutboxWriter WriteTx::outbox() const { return OutboxWriter(s_); }

}  // namespace cortex
