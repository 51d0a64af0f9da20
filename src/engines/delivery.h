// The dispatcher: delivers outbox rows through a connector, with retries and exponential
// backoff, and records the outcome (delivered or failed) in the ledger. Rows are leased so
// that several processes on one store do not deliver the same row at the same time.
#pragma once

#include "connectors/connector.h"
#include "core/clock.h"
#include "store/store.h"

namespace cortex {

class Dispatcher {
 public:
  Dispatcher(Store& store, const Clock& clock, Connector& connector, const DeliveryConfig& config);

  // Attempts every outbox row due at `now`. Returns the number delivered.
  Result<int> RunOnce(TimePoint now);

 private:
  Store& store_;
  const Clock& clock_;
  Connector& connector_;
  const DeliveryConfig& config_;
};

// The wait before attempt n+1 after n failed attempts: 1 s, 2 s, 4 s ... at most 5 min.
std::chrono::milliseconds RetryBackoff(int failed_attempts);

}  // namespace cortex
