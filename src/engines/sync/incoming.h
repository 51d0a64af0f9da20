// Where the person's world comes in from: a mailbox, a calendar (docs/connectors.md). Every
// source is driven the same way: cortex sync runs one pass of each; cortex serve's poller
// runs each on a thread of its own, a pass every PollInterval (sooner when the source can
// tell news, as IMAP's IDLE does), with backoff after a failed pass. A new kind of source
// (JMAP, a chat channel) is a class of its own and one line in IncomingSources.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "core/stop_signal.h"
#include "store/store.h"

namespace cortex {

struct EngineConfig;

// What a pass did: `summary` as cortex sync prints it ("added 12 (INBOX 10, Sent 2)");
// `changed` if it stored anything (the poller logs only those).
struct SourcePass {
  std::string summary;
  bool changed = false;
};

class IncomingSource {
 public:
  virtual ~IncomingSource() = default;

  // "imap alice@mail.example", "calendar cal.example/work": how logs and cortex sync name it.
  virtual std::string Name() const = 0;
  // The short kind ("mail", "calendar"): the poller's thread is "cortex-<kind>".
  virtual std::string Kind() const = 0;
  virtual const std::string& Workspace() const = 0;
  virtual std::chrono::seconds PollInterval() const = 0;

  // One pass: what is new at the source, into its workspace (created if missing). Errors
  // name the source; what a failed pass committed before the failure stays, and the next
  // pass goes on from there. `stop`, if given and set, ends the pass early.
  virtual Result<SourcePass> Pass(Store& store, const Clock& clock,
                                  const std::atomic<bool>* stop) = 0;

  // While serving, before each pass: start watching for news if the source can, so that
  // what arrives during the pass wakes the next one. Most sources cannot.
  virtual void Watch() {}
  // While serving, after a pass: returns at `until`, once `stop` is set, or early when the
  // source has news.
  virtual void WaitForNews(std::chrono::steady_clock::time_point until, StopSignal& stop) {
    stop.WaitUntil(until);
  }
};

// Every source `config` names, in its order: [[connectors.imap]], then
// [[connectors.calendar]]. Each holds a copy of its account's settings.
std::vector<std::unique_ptr<IncomingSource>> IncomingSources(const EngineConfig& config);

// `first` doubled per failure after the first, at most `most`: the wait after `failures`
// failed attempts in a row.
inline std::chrono::seconds Backoff(std::chrono::seconds first, int failures,
                                    std::chrono::seconds most) {
  if (failures <= 0) return first;
  return std::min(first * (int64_t{1} << std::min(failures, 16)), most);
}

}  // namespace cortex
