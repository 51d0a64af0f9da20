// The notifications area: triaged episodes, and when each surfaces.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/model.h"
#include "store/tx.h"

namespace cortex {

class NotificationsReader {
 public:
  explicit NotificationsReader(TxState& s) : s_(s) {}
  Result<Notification> Get(const std::string& ws, const std::string& notification_id);
  // Notifications (of `triage_class`, if given) whose surface_at is in (after, until]
  // (either bound optional), ordered by surface_at then id, at most `limit`.
  Result<std::vector<Notification>> List(const std::string& ws,
                                         std::optional<TriageClass> triage_class,
                                         std::optional<TimePoint> after,
                                         std::optional<TimePoint> until, int limit,
                                         bool newest_first);

 protected:
  TxState& s_;

 private:
  // Appends the first `limit` surfacing notifications of class `cls` in (after, until].
  Status Append(const std::string& ws, TriageClass cls, std::optional<TimePoint> after,
                std::optional<TimePoint> until, int limit, bool newest_first,
                std::vector<Notification>& out);
};

class NotificationsWriter : public NotificationsReader {
 public:
  using NotificationsReader::NotificationsReader;
  Status Insert(const Notification& n);
};

inline NotificationsReader ReadTx::notifications() const { return NotificationsReader(s_); }
inline NotificationsWriter WriteTx::notifications() const { return NotificationsWriter(s_); }

}  // namespace cortex
