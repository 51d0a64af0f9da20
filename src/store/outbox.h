// The outbox area: the transactional outbox the dispatcher delivers from, and the messages
// the built-in `outbox` connector delivered.
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
  // Rows of every workspace ready for a delivery attempt at `t`, oldest first.
  Result<std::vector<OutboxItem>> Due(TimePoint t, int limit);
  // Messages the built-in `outbox` connector delivered, oldest first.
  Result<std::vector<nlohmann::json>> ListDelivered(const std::string& ws);

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
  // Records a delivered message once per action (idempotent: false if already recorded).
  Result<bool> RecordDelivered(const OutboxItem& item, TimePoint at);
};

inline OutboxReader ReadTx::outbox() const { return OutboxReader(s_); }
inline OutboxWriter WriteTx::outbox() const { return OutboxWriter(s_); }

}  // namespace cortex
