// The episodes area: observed events (never edited, only added), and the look-ups triage
// makes over them for every message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/model.h"
#include "store/tx.h"

namespace cortex {

// A message as the learner reads it: who, which way, when, which thread (no text).
struct MessageFact {
  std::string id;
  bool sent = false;  // message_sent (else message_received)
  TimePoint occurred_at;
  std::string entity_id;
  std::string thread;
};

class EpisodesReader {
 public:
  explicit EpisodesReader(TxState& s) : s_(s) {}
  Result<Episode> Get(const std::string& ws, const std::string& episode_id);
  // The id, summary and time of episode `episode_id` (its body stays unread).
  Result<EpisodeSummary> GetSummary(const std::string& ws, const std::string& episode_id);
  Result<Episode> FindByExternalId(const std::string& ws, const std::string& external_id);
  Result<bool> ExternalIdExists(const std::string& ws, const std::string& external_id);

  // The calendar block covering instant `t`, if any: started at or before `t` (and after
  // `earliest_start`), ending after `t`. The latest-ending one wins.
  Result<std::optional<Episode>> ActiveBlockAt(const std::string& ws, TimePoint t,
                                               TimePoint earliest_start);

  // The stored episodes with a counterparty up to instant `t` (the one being triaged is
  // not stored yet, so every one counts; no row needs reading past the index).
  struct History {
    bool any_earlier = false;  // any episode with this counterparty at or before `t`
    int64_t unanswered = 0;    // their messages since our last message to them (and since
                               // `awaiting_since`), up to `t` (counted up to 100)
    std::optional<TimePoint> first_unanswered_at;
  };
  Result<History> CounterpartyHistory(const std::string& ws, const std::string& entity_id,
                                      TimePoint t, TimePoint awaiting_since);
  // Every message (received or sent) with a counterparty that occurred at or after `since`,
  // in no particular order.
  Result<std::vector<MessageFact>> MessagesSince(const std::string& ws, TimePoint since);
  // The calendar blocks (focus blocks) begun after `since` that still stand (not
  // retracted, migration 26): (start, end), by start.
  Result<std::vector<std::pair<TimePoint, TimePoint>>> BlocksSince(const std::string& ws,
                                                                   TimePoint since);
  // The episodes stamped with a world_version greater than `after` (a reader keeping up
  // with the workspace: the learner): how many, of any kind; the messages with a
  // counterparty among them; and the greatest version among them ("" if none).
  struct AfterVersion {
    int64_t episodes = 0;
    std::vector<MessageFact> messages;
    std::string world_version;
  };
  Result<AfterVersion> EpisodesAfterVersion(const std::string& ws, const std::string& after);
  // The greatest world_version stamped on an episode of the workspace ("" if none).
  Result<std::string> LatestWorldVersion(const std::string& ws);
  // The triage class each notified episode got: (episode id, class), for every notification
  // that surfaces at or after `since` or never (and maybe some others).
  Result<std::vector<std::pair<std::string, TriageClass>>> NotifiedClasses(const std::string& ws,
                                                                           TimePoint since);
  // Stored episodes in `thread` with occurred_at in [from, to] (counted up to 100).
  Result<int64_t> CountInThread(const std::string& ws, const std::string& thread, TimePoint from,
                                TimePoint to);

  // How far a connector has read source `source` (e.g. "imap:me@host/INBOX"): the text it
  // left with the episodes it last committed, or nullopt before its first commit.
  Result<std::optional<std::string>> Cursor(const std::string& ws, const std::string& source);

 protected:
  TxState& s_;

 private:
  Result<std::optional<Episode>> ActiveBlockInDatabase(const std::string& ws, TimePoint t,
                                                       TimePoint earliest_start);
  Status ReadBlocks(const std::string& ws, TimePoint from, TimePoint to,
                    std::vector<Episode>* rows);
  Status WidenBlocks(const std::string& ws, TimePoint from, TimePoint to);
};

class EpisodesWriter : public EpisodesReader {
 public:
  using EpisodesReader::EpisodesReader;
  Status Insert(const Episode& e);
  // Sets `source`'s cursor; a connector calls it in the transaction that stores the episodes
  // read up to it, so a crash loses neither or keeps both.
  Status SetCursor(const std::string& ws, const std::string& source, const std::string& cursor,
                   TimePoint at);
  // Retracts episode `episode_id`: it no longer stands (a calendar event moved or
  // cancelled). The episode stays; focus-block look-ups skip it. Retracting twice is a
  // no-op.
  Status Retract(const std::string& ws, const std::string& episode_id, TimePoint at,
                 const std::string& reason);
};

inline EpisodesReader ReadTx::episodes() const { return EpisodesReader(s_); }
inline EpisodesWriter WriteTx::episodes() const { return EpisodesWriter(s_); }

}  // namespace cortex
