// Signals: facts about an incoming message computed from the world model, each with a
// sentence a person can read. Computed as of the message's own time, so re-running triage
// on the same world gives the same answer.
#pragma once

#include <optional>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "store/model.h"
#include "store/store.h"

namespace cortex {

// A time in the workspace's zone.
struct LocalTime {
  int minute_of_day = 0;  // 0..1439
  int weekday = 0;        // 0 = Monday ... 6 = Sunday
};
LocalTime ToLocal(TimePoint t, const WorkspaceSettings& s);
// "11:00", in the workspace's zone.
std::string LocalClock(TimePoint t, const WorkspaceSettings& s);
// Subject, summary and body, lowercased: what word conditions look at.
std::string MessageText(const Episode& ep);
// True iff `word` (lowercase; may hold spaces, e.g. "by eod") occurs in `text` as a whole word.
bool HasWholeWord(const std::string& text, const std::string& word);

// True iff `minute` is in [from, until), a window that may wrap past midnight.
bool InWindow(int minute, int from, int until);
// The first daily-digest time strictly after `t`.
TimePoint NextDigest(TimePoint t, const WorkspaceSettings& s);

// The signals as a decision's details show them: [{"kind": ..., "summary": ...}, ...],
// built member by member (an initializer list copies every value it is given).
nlohmann::json SignalsJson(const std::vector<Signal>& signals);

struct SignalReport {
  std::vector<Signal> signals;
  std::optional<Episode> focus_block;  // the calendar block active at the message's time
};

// Computes the signals of episode `ep` from counterparty `who` (null if none), against
// the episodes stored so far: `ep` itself must not be stored yet.
Result<SignalReport> ComputeSignals(ReadTx& tx, const WorkspaceSettings& settings,
                                    const Episode& ep, const Entity* who);

}  // namespace cortex
