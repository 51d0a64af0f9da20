// The storage interface the engines use. One implementation per database (SQLite and
// PostgreSQL, sharing their SQL through store/sql.h). Every method that touches
// workspace data takes the workspace id: there is no unscoped read.
//
// Work is expressed as transactions: Read() runs a function against a consistent snapshot
// that never waits behind writers; Write() runs a function inside one write transaction,
// committed durably before Write() returns. Because a write is a self-contained function,
// an implementation is free to batch several concurrent writes into one commit (group
// commit) without changing any caller.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/model.h"

namespace cortex {

// Reads inside a transaction. Not thread-safe: used only by the function it is passed to.
class ReadTx {
 public:
  virtual ~ReadTx() = default;
  virtual Result<Workspace> FindWorkspaceByName(const std::string& name) = 0;
  virtual Result<Workspace> GetWorkspace(const std::string& id) = 0;
  virtual Result<std::vector<Workspace>> ListWorkspaces() = 0;

  // Looks a token up by the SHA-256 of its secret, revoked or not.
  virtual Result<TokenRecord> FindTokenByHash(const std::string& hash) = 0;
  virtual Result<std::vector<TokenRecord>> ListTokens(const std::string& ws) = 0;

  virtual Result<Entity> GetEntity(const std::string& ws, const std::string& entity_id) = 0;
  // REQUIRES: `identifier` is normalised (see NormalizeIdentifier).
  virtual Result<Entity> FindEntityByIdentifier(const std::string& ws,
                                                const std::string& identifier) = 0;
  virtual Result<bool> EpisodeExternalIdExists(const std::string& ws,
                                               const std::string& external_id) = 0;
  virtual Result<WorldCounts> CountWorld(const std::string& ws) = 0;

  virtual Result<Episode> GetEpisode(const std::string& ws, const std::string& episode_id) = 0;
  // The id, summary and time of episode `episode_id` (its body stays unread).
  virtual Result<EpisodeSummary> GetEpisodeSummary(const std::string& ws,
                                                   const std::string& episode_id) = 0;
  virtual Result<Episode> FindEpisodeByExternalId(const std::string& ws,
                                                  const std::string& external_id) = 0;
  // The calendar block covering instant `t`, if any: started at or before `t` (and after
  // `earliest_start`), ending after `t`. The latest-ending one wins.
  virtual Result<std::optional<Episode>> ActiveBlockAt(const std::string& ws, TimePoint t,
                                                       TimePoint earliest_start) = 0;
  // The stored episodes with a counterparty up to instant `t` (the one being triaged is
  // not stored yet, so every one counts; no row needs reading past the index).
  struct History {
    bool any_earlier = false;  // any episode with this counterparty at or before `t`
    int64_t unanswered = 0;    // their messages since our last message to them (and since
                               // `awaiting_since`), up to `t` (counted up to 100)
    std::optional<TimePoint> first_unanswered_at;
  };
  virtual Result<History> CounterpartyHistory(const std::string& ws, const std::string& entity_id,
                                              TimePoint t, TimePoint awaiting_since) = 0;
  // Stored episodes in `thread` with occurred_at in [from, to] (counted up to 100).
  virtual Result<int64_t> CountThreadEpisodes(const std::string& ws, const std::string& thread,
                                              TimePoint from, TimePoint to) = 0;

  virtual Result<WorkspaceSettings> GetSettings(const std::string& ws) = 0;
  // Rules in `ws`; with `active_only`, only those in force. Ordered by position.
  virtual Result<std::vector<Rule>> ListRules(const std::string& ws, bool active_only) = 0;
  virtual Result<Rule> GetRule(const std::string& ws, const std::string& rule_id) = 0;

  virtual Result<Decision> GetDecision(const std::string& ws, const std::string& decision_id) = 0;
  // Newest first (by id), at most `limit`.
  virtual Result<std::vector<Decision>> ListDecisions(const std::string& ws,
                                                      const DecisionFilter& filter, int limit) = 0;
  // The newest triage decisions about `entity_id` with id >= `min_id`, newest first, at
  // most `limit`.
  virtual Result<std::vector<TriageLink>> RecentTriage(const std::string& ws,
                                                       const std::string& entity_id,
                                                       const std::string& min_id, int limit) = 0;
  virtual Result<Notification> GetNotification(const std::string& ws,
                                               const std::string& notification_id) = 0;
  // Notifications (of `triage_class`, if given) whose surface_at is in (after, until]
  // (either bound optional), ordered by surface_at then id.
  virtual Result<std::vector<Notification>> ListNotifications(
      const std::string& ws, const std::optional<std::string>& triage_class,
      std::optional<TimePoint> after, std::optional<TimePoint> until, int limit,
      bool newest_first) = 0;

  virtual Result<Action> GetAction(const std::string& ws, const std::string& action_id) = 0;
  virtual Result<Action> FindActionByDecision(const std::string& ws,
                                              const std::string& decision_id) = 0;
  // Pending actions of every workspace whose due time is at or before `t`, soonest first.
  virtual Result<std::vector<Action>> DueActions(TimePoint t, int limit) = 0;

  virtual Result<std::vector<TrustSetting>> ListTrust(const std::string& ws) = 0;
  virtual Result<TrustStreak> GetTrustStreak(const std::string& ws, const std::string& cls,
                                             const std::string& entity_id) = 0;

  // The chain's anchor kept on the workspace row: the last seq and hash appended.
  virtual Result<std::pair<int64_t, std::string>> LedgerAnchor(const std::string& ws) = 0;
  // Ledger entries of `ws` with seq > after_seq, in seq order, at most `limit`.
  virtual Result<std::vector<LedgerEntry>> ListLedger(const std::string& ws, int64_t after_seq,
                                                      int limit) = 0;
  virtual Result<std::vector<LedgerEntry>> ListActionLedger(const std::string& ws,
                                                            const std::string& action_id) = 0;

  // Outbox rows of every workspace ready for a delivery attempt at `t`, oldest first.
  virtual Result<std::vector<OutboxItem>> DueOutbox(TimePoint t, int limit) = 0;
  // Inference units spent on local day `day` (YYYY-MM-DD) by workspace `ws` in all and by
  // its token `token_id`.
  struct InferenceUse {
    int64_t workspace = 0;
    int64_t token = 0;
  };
  virtual Result<InferenceUse> InferenceUnits(const std::string& ws, const std::string& token_id,
                                              const std::string& day) = 0;
  // The workspace's quota overrides (name, value), by name.
  virtual Result<std::vector<std::pair<std::string, int64_t>>> QuotaOverrides(
      const std::string& ws) = 0;
  // Messages the built-in `outbox` connector delivered, oldest first.
  virtual Result<std::vector<nlohmann::json>> ListDeliveredMessages(const std::string& ws) = 0;

  // MCP session `id` of any workspace (the caller compares its workspace).
  virtual Result<std::optional<McpSession>> GetSession(const std::string& id) = 0;
  // Sessions used at or after `since`.
  virtual Result<int64_t> CountSessions(TimePoint since) = 0;
};

// Reads and writes inside one write transaction.
class WriteTx : public ReadTx {
 public:
  virtual Status InsertWorkspace(const Workspace& w) = 0;
  virtual Status SetWorldVersion(const std::string& ws, const std::string& wv) = 0;
  virtual Status SetAgentVersion(const std::string& ws, const std::string& av) = 0;

  virtual Status InsertToken(const TokenRecord& t) = 0;
  // NotFound unless the token exists in `ws` and is not yet revoked.
  virtual Status RevokeToken(const std::string& ws, const std::string& token_id, TimePoint at) = 0;

  // Inserts the entity with its identifiers and tags. Conflict if an identifier is taken.
  virtual Status InsertEntity(const Entity& e) = 0;
  virtual Status AddEntityIdentifier(const std::string& ws, const std::string& entity_id,
                                     const std::string& identifier) = 0;
  virtual Status AddEntityTag(const std::string& ws, const std::string& entity_id,
                              const std::string& tag) = 0;
  virtual Status SetEntityName(const std::string& ws, const std::string& entity_id,
                               const std::string& name) = 0;

  virtual Status InsertEpisode(const Episode& e) = 0;

  virtual Status SetSettings(const std::string& ws, const WorkspaceSettings& s) = 0;
  virtual Status InsertRule(const Rule& r) = 0;
  virtual Status RetireRule(const std::string& ws, const std::string& rule_id, TimePoint at) = 0;
  virtual Status SetRulePosition(const std::string& ws, const std::string& rule_id,
                                 int position) = 0;
  virtual Status AddRuleHits(const std::string& ws, const std::string& rule_id, int64_t n) = 0;

  virtual Status InsertDecision(const Decision& d) = 0;
  virtual Status InsertNotification(const Notification& n) = 0;
  virtual Status SetDecisionStatus(const std::string& ws, const std::string& decision_id,
                                   const std::string& status) = 0;

  virtual Status AddInferenceUnits(const std::string& ws, const std::string& token_id,
                                   const std::string& day, int64_t units) = 0;
  // Sets quota `name` for `ws`, or removes the override (back to the default) if nullopt.
  virtual Status SetQuotaOverride(const std::string& ws, const std::string& name,
                                  std::optional<int64_t> value) = 0;
  virtual Status InsertAction(const Action& a) = 0;
  // Moves action `id` from status `from` to `to` (clearing its due time, and replacing its
  // draft if `draft` is given). Conflict if it is not in status `from`: this is what makes
  // concurrent approvals execute once.
  virtual Status TransitionAction(const std::string& ws, const std::string& id,
                                  const std::string& from, const std::string& to,
                                  const std::optional<std::string>& draft, TimePoint at) = 0;

  virtual Status SetTrust(const std::string& ws, const TrustSetting& t) = 0;
  virtual Status SetTrustStreak(const std::string& ws, const std::string& cls,
                                const std::string& entity_id, const TrustStreak& s) = 0;

  // Inserts the entry, with its provenance and detail given as JSON text (the ledger engine
  // has written them to hash the entry; e.provenance and e.detail are not read), and moves
  // the workspace's anchor to it.
  // REQUIRES: e.seq, e.prev_hash and e.hash computed by the ledger engine.
  virtual Status AppendLedger(const LedgerEntry& e, const std::string& provenance_json,
                              const std::string& detail_json) = 0;

  virtual Status InsertOutbox(const OutboxItem& item) = 0;
  // Takes a lease on outbox row `seen` until `lease_until` if it is still pending, due at
  // `now`, not leased past `now`, and unchanged since `seen` was read (no other process has
  // attempted it meanwhile). Returns false otherwise.
  virtual Result<bool> LeaseOutbox(const OutboxItem& seen, TimePoint now,
                                   TimePoint lease_until) = 0;
  virtual Status UpdateOutbox(const OutboxItem& item, std::optional<TimePoint> delivered_at) = 0;
  // Records a delivered message once per action (idempotent: false if already recorded).
  virtual Result<bool> RecordDeliveredMessage(const OutboxItem& item, TimePoint at) = 0;

  virtual Status InsertSession(const McpSession& s) = 0;
  virtual Status TouchSession(const std::string& id, TimePoint at) = 0;
  // False if `ws` has no session `id`.
  virtual Result<bool> DeleteSession(const std::string& ws, const std::string& id) = 0;
  // Forgets sessions last used before `before`.
  virtual Status DeleteIdleSessions(TimePoint before) = 0;
  // Counts one call of `token_id` in `ws` in minute `minute` and local day `day`, and
  // returns the counts including it. Locks only the four counters, not the workspace, so
  // counting never waits behind a long write to the workspace.
  virtual Result<CallCounts> CountCall(const std::string& ws, const std::string& token_id,
                                       int64_t minute, int64_t day) = 0;
  // Forgets call counts of minutes before `minute` and days before `day`, in every
  // workspace.
  virtual Status DeleteCallCountsBefore(int64_t minute, int64_t day) = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // Runs `fn` on a consistent snapshot. Thread-safe; readers run concurrently.
  virtual Status Read(const std::function<Status(ReadTx&)>& fn) = 0;

  // How a commit must reach the disk before Write() returns.
  enum class Durability {
    kSynced,   // flushed: survives a crash of this process, the database or the machine
    kRelaxed,  // may be lost if the database server itself crashes within a moment of the
               // commit: only for bookkeeping cheaper to lose than to flush (tool-call
               // counts, a session's last use); never for anything a caller acknowledges,
               // and never locking a workspace (PostgreSQL lets these past its cap on
               // concurrent writes)
  };

  // Runs `fn` in one write transaction: committed iff `fn` returns OK, rolled back entirely
  // otherwise. Thread-safe. `fn` may run on another thread (SQLite's writer thread), so it
  // must not rely on the caller's thread-local state.
  virtual Status Write(const std::function<Status(WriteTx&)>& fn, Durability durability) = 0;
  Status Write(const std::function<Status(WriteTx&)>& fn) { return Write(fn, Durability::kSynced); }

  // True when a request running as a fiber (core/suspend.h) is suspended in Write() while
  // its write waits to be committed, rather than blocking its thread. False: Write(), like
  // every call, blocks the calling thread (PostgreSQL: each statement is a round trip).
  virtual bool SuspendsWrites() const { return false; }

  // The highest migration applied.
  virtual Result<int> SchemaVersion() = 0;

  // True when several `cortex serve` processes may share this store (PostgreSQL): state
  // they must agree on, such as tool-call counts, then lives in the store, not in memory.
  virtual bool MultiInstance() const = 0;

  // Between these two calls (use SharedReads), every Read() this thread makes on this store
  // runs in one read transaction. The default does nothing: each Read() is its own.
  virtual void BeginSharedReads() {}
  virtual void EndSharedReads() noexcept {}
};

// While it lives, the Read() calls of this thread share one snapshot: a read-only request's
// authentication, quota check and tool cost one read transaction instead of three (SQLite:
// each is a lock and an unlock of the WAL index and an fstat, ~12% of a read's CPU), and see
// the same state. Only for work that does not write: a Read() after a Write() in the scope
// would not see it. The reads also share one connection, so none may run inside another's
// function (no Read() nested in a Read(), which no caller does anyway).
class SharedReads {
 public:
  explicit SharedReads(Store& store) : store_(store) { store_.BeginSharedReads(); }
  ~SharedReads() { store_.EndSharedReads(); }
  SharedReads(const SharedReads&) = delete;
  SharedReads& operator=(const SharedReads&) = delete;

 private:
  Store& store_;
};

// Opens (creating if needed) the SQLite store in directory `dir` and applies any pending
// migrations.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& dir);

// Connects to the PostgreSQL database at `url` (postgresql://...) and applies any pending
// migrations. The database must exist.
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& url);

// A postgresql:// (or postgres://) URL opens PostgreSQL; anything else is a SQLite data
// directory.
Result<std::unique_ptr<Store>> OpenStore(const std::string& where);
bool IsPostgresUrl(const std::string& where);
// `where` without a password, for logs.
std::string RedactedLocation(const std::string& where);

}  // namespace cortex
