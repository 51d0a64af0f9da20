// The dispatcher: delivers outbox rows through a connector, with retries and exponential
// backoff, and records the outcome: a message's in its action and the ledger, a digest's
// in its decision. Events go to the `[push]` webhook instead. Rows are leased so that
// several processes on one store do not deliver the same row at the same time.
#pragma once

#include "connectors/connector.h"
#include "core/clock.h"
#include "store/store.h"

namespace cortex {

class Dispatcher {
 public:
  // `connector` delivers messages and digests; `push`, if given, pushed events.
  Dispatcher(Store& store, const Clock& clock, Connector& connector, const DeliveryConfig& config,
             Connector* push = nullptr);

  // Attempts every outbox row due at `now`. Returns the number delivered.
  Result<int> RunOnce(TimePoint now);

 private:
  Result<int> RunKind(OutboxKind kind, Connector& connector, TimePoint now);
  // Records a row's final outcome (item.status) where its kind keeps it.
  Status RecordOutcome(WriteTx& tx, const OutboxItem& item, Connector& connector, TimePoint at);
  // Records a delivered message as a message_sent episode.
  Status RecordSent(WriteTx& tx, const Action& action, const OutboxItem::Mail& mail, TimePoint at);

  Store& store_;
  const Clock& clock_;
  Connector& connector_;
  Connector* push_;
  const DeliveryConfig& config_;
};

// The wait before attempt n+1 after n failed attempts: 1 s, 2 s, 4 s ... at most 5 min.
std::chrono::milliseconds RetryBackoff(int failed_attempts);

}  // namespace cortex
