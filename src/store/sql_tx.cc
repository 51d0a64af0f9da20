// The ReadTx/WriteTx methods in SQL, once for both databases: SQLite and PostgreSQL run
// the same statements (written in the SQL they share) through the driver interface of
// store/sql.h. Times are integer milliseconds since the Unix epoch; JSON is stored as text.
#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_map>

#include "core/json_text.h"
#include "core/time.h"
#include "store/sql.h"
#include "store/store.h"

namespace cortex {

namespace {
// Every column of an episode, in the order SqlTx::EpisodeRow reads them.
constexpr const char* kEpisodeSelect =
    "SELECT id, workspace_id, kind, occurred_at, ends_at, entity_id, channel, subject,"
    " summary, body, thread, external_id, world_version, created_at FROM episodes";
}  // namespace

namespace triage_sql {

const char* const kEarlierReceived =
    "SELECT 1 FROM episodes WHERE workspace_id = ? AND entity_id = ?"
    " AND kind = 'message_received' AND occurred_at <= ? LIMIT 1";

const std::string& EarlierOther() {
  // One seek per kind in episodes_by_entity_kind, rather than a walk over the
  // counterparty's whole history; messages in either direction are left to kLastSent and
  // kEarlierReceived.
  static const std::string sql = [] {
    std::string kinds;
    for (std::string_view k : kEpisodeKinds) {
      if (k == "message_sent" || k == "message_received") continue;
      kinds += (kinds.empty() ? "'" : ", '") + std::string(k) + "'";
    }
    return "SELECT 1 FROM episodes WHERE workspace_id = ? AND entity_id = ? AND kind IN (" + kinds +
           ") AND occurred_at <= ? LIMIT 1";
  }();
  return sql;
}

const char* const kLastSent =
    "SELECT max(occurred_at) FROM episodes WHERE workspace_id = ? AND entity_id = ?"
    " AND kind = 'message_sent' AND occurred_at <= ?";

const char* const kUnanswered =
    "SELECT count(*), min(occurred_at) FROM (SELECT occurred_at FROM episodes"
    " WHERE workspace_id = ? AND entity_id = ? AND kind = 'message_received'"
    " AND occurred_at > ? AND occurred_at <= ? LIMIT 100) AS recent";

const char* const kThreadCount =
    "SELECT count(*) FROM (SELECT 1 FROM episodes WHERE workspace_id = ? AND thread = ?"
    " AND occurred_at >= ? AND occurred_at <= ? LIMIT 100) AS recent";

// Of the blocks that began up to a horizon before the time, the latest end after it. An
// aggregate rather than ORDER BY ends_at DESC LIMIT 1, which opened a temporary b-tree on
// every call to sort what the range held (two thirds of the look-up's cost, for a row
// that exists for few messages).
const char* const kActiveBlockEnd =
    "SELECT max(ends_at) FROM episodes WHERE workspace_id = ? AND kind = 'calendar_block'"
    " AND occurred_at > ? AND occurred_at <= ? AND ends_at > ?";

// Blocks begun in a span (after, until], read from episodes_blocks.
constexpr const char* kBlocksBegunIn =
    " WHERE workspace_id = ? AND kind = 'calendar_block' AND occurred_at > ?"
    " AND occurred_at <= ?";

// The block with that end (of several, the latest begun).
const std::string& ActiveBlock() {
  static const std::string sql = std::string(kEpisodeSelect) + kBlocksBegunIn +
                                 " AND ends_at = ? ORDER BY occurred_at DESC LIMIT 1";
  return sql;
}

// The blocks begun in a span, by start (a transaction's focus-block look-ups after its
// first: SqlTx::ActiveBlockAt).
const std::string& BlocksBetween() {
  static const std::string sql =
      std::string(kEpisodeSelect) + kBlocksBegunIn + " ORDER BY occurred_at LIMIT ?";
  return sql;
}

}  // namespace triage_sql

namespace {

class SqlTx final : public SqlWriteTx {
 public:
  explicit SqlTx(SqlConn& c) : c_(c) {}

  Status FinishWrite() override {
    for (const auto& [ws, n] : uncounted_) {
      Stmt s = c_.Prepare(
          "UPDATE workspaces SET entity_count = entity_count + ?,"
          " episode_count = episode_count + ? WHERE id = ?");
      CORTEX_RETURN_IF_ERROR(s.Bind(1, n.entities).Bind(2, n.episodes).Bind(3, ws).Run());
    }
    uncounted_.clear();
    return Status::Ok();
  }

  // --- reads ---

  Result<Workspace> FindWorkspaceByName(const std::string& name) override {
    Stmt s = c_.Prepare(
        "SELECT id, name, world_version, agent_version, created_at FROM workspaces "
        "WHERE name = ?");
    s.Bind(1, name);
    return ReadWorkspace(s, "workspace '" + name + "'");
  }

  Result<Workspace> GetWorkspace(const std::string& id) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(id));
    return Remembered(&StableRows::workspaces, id, [&]() -> Result<Workspace> {
      Stmt s = c_.Prepare(
          "SELECT id, name, world_version, agent_version, created_at FROM workspaces "
          "WHERE id = ?");
      s.Bind(1, id);
      return ReadWorkspace(s, "workspace " + id);
    });
  }

  Result<std::vector<Workspace>> ListWorkspaces() override {
    Stmt s = c_.Prepare(
        "SELECT id, name, world_version, agent_version, created_at FROM workspaces "
        "ORDER BY name");
    std::vector<Workspace> out;
    Status st;
    while (s.Step(&st)) out.push_back(WorkspaceRow(s));
    if (!st.ok()) return st;
    return out;
  }

  Result<TokenRecord> FindTokenByHash(const std::string& hash) override {
    return Remembered(&StableRows::tokens, hash, [&]() -> Result<TokenRecord> {
      Stmt s = c_.Prepare(
          "SELECT id, workspace_id, hash, label, scopes, created_at, revoked_at FROM tokens "
          "WHERE hash = ?");
      s.Bind(1, hash);
      Status st;
      if (!s.Step(&st)) return st.ok() ? Status::NotFound("unknown token") : st;
      return TokenRow(s);
    });
  }

  Result<std::vector<TokenRecord>> ListTokens(const std::string& ws) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(
        "SELECT id, workspace_id, hash, label, scopes, created_at, revoked_at FROM tokens "
        "WHERE workspace_id = ? ORDER BY id");
    s.Bind(1, ws);
    std::vector<TokenRecord> out;
    Status st;
    while (s.Step(&st)) out.push_back(TokenRow(s));
    if (!st.ok()) return st;
    return out;
  }

  Result<Entity> GetEntity(const std::string& ws, const std::string& entity_id) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(
        "SELECT id, workspace_id, kind, name, created_at FROM entities "
        "WHERE workspace_id = ? AND id = ?");
    s.Bind(1, ws).Bind(2, entity_id);
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::NotFound("no entity " + entity_id) : st;
    Entity e{s.Text(0), s.Text(1), s.Text(2), s.Text(3), {}, {}, s.Time(4)};
    CORTEX_RETURN_IF_ERROR(LoadEntityDetails(&e));
    return e;
  }

  Result<Entity> FindEntityByIdentifier(const std::string& ws,
                                        const std::string& identifier) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(
        "SELECT entity_id FROM entity_identifiers WHERE workspace_id = ? AND identifier = ?");
    s.Bind(1, ws).Bind(2, identifier);
    Status st;
    if (!s.Step(&st)) {
      return st.ok() ? Status::NotFound("no entity with identifier '" + identifier + "'") : st;
    }
    std::string id = s.Text(0);
    return GetEntity(ws, id);
  }

  Result<bool> EpisodeExternalIdExists(const std::string& ws,
                                       const std::string& external_id) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare("SELECT 1 FROM episodes WHERE workspace_id = ? AND external_id = ?");
    s.Bind(1, ws).Bind(2, external_id);
    Status st;
    bool found = s.Step(&st);
    if (!st.ok()) return st;
    return found;
  }

  Result<WorldCounts> CountWorld(const std::string& ws) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    // Entities and episodes are counted as they are inserted (counting them here took
    // time in proportion to the world: 12 ms at 10^5 episodes).
    Stmt s = c_.Prepare(
        "SELECT entity_count, episode_count,"
        " (SELECT count(*) FROM tokens WHERE workspace_id = ?1 AND revoked_at IS NULL)"
        " FROM workspaces WHERE id = ?1");
    s.Bind(1, ws);
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::NotFound("no workspace " + ws) : st;
    WorldCounts counts{s.Int(0), s.Int(1), s.Int(2)};
    if (auto it = uncounted_.find(ws); it != uncounted_.end()) {
      counts.entities += it->second.entities;
      counts.episodes += it->second.episodes;
    }
    return counts;
  }

  Result<Episode> GetEpisode(const std::string& ws, const std::string& id) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(kEpisodeSelect + std::string(" WHERE workspace_id = ? AND id = ?"));
    s.Bind(1, ws).Bind(2, id);
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::NotFound("no episode " + id) : st;
    return EpisodeRow(s);
  }

  Result<EpisodeSummary> GetEpisodeSummary(const std::string& ws, const std::string& id) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s =
        c_.Prepare("SELECT summary, occurred_at FROM episodes WHERE workspace_id = ? AND id = ?");
    s.Bind(1, ws).Bind(2, id);
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::NotFound("no episode " + id) : st;
    return EpisodeSummary{id, s.Text(0), s.Time(1)};
  }

  Result<Episode> FindEpisodeByExternalId(const std::string& ws,
                                          const std::string& external_id) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s =
        c_.Prepare(kEpisodeSelect + std::string(" WHERE workspace_id = ? AND external_id = ?"));
    s.Bind(1, ws).Bind(2, external_id);
    Status st;
    if (!s.Step(&st)) {
      return st.ok() ? Status::NotFound("no episode with external_id '" + external_id + "'") : st;
    }
    return EpisodeRow(s);
  }

  Result<std::optional<Episode>> ActiveBlockAt(const std::string& ws, TimePoint t,
                                               TimePoint earliest_start) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Blocks& b = blocks_[ws];
    // One look-up (action.communicate, a one-line ingest) asks the database. From the
    // second on, the transaction reads the blocks of the span asked about once, with a day
    // either side, and answers from memory: a 10,000-line batch asked for every message
    // (~16k instructions a line, ~6% of ingesting one), and its span holds a few hundred
    // blocks. A look-up outside the span reads the part of the wider span not yet read.
    if (!b.asked) {
      b.asked = true;
      return ActiveBlockInDatabase(ws, t, earliest_start);
    }
    if (!b.too_many && !(b.loaded && b.from <= earliest_start && t <= b.to)) {
      CORTEX_RETURN_IF_ERROR(
          WidenBlocks(ws, earliest_start - kBlockSpanMargin, t + kBlockSpanMargin, &b));
    }
    if (b.too_many) return ActiveBlockInDatabase(ws, t, earliest_start);
    return b.At(t, earliest_start);
  }

  Result<History> CounterpartyHistory(const std::string& ws, const std::string& entity_id,
                                      TimePoint t, TimePoint awaiting_since) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    History h;
    Status st;
    int64_t since = ToUnixMillis(awaiting_since);
    bool sent = false;
    {
      Stmt s = c_.Prepare(triage_sql::kLastSent);
      s.Bind(1, ws).Bind(2, entity_id).Bind(3, t);
      if (s.Step(&st) && !s.IsNull(0)) {
        sent = true;
        since = std::max(since, s.Int(0));
      }
      CORTEX_RETURN_IF_ERROR(st);
    }
    {
      Stmt s = c_.Prepare(triage_sql::kUnanswered);
      s.Bind(1, ws).Bind(2, entity_id).Bind(3, since).Bind(4, t);
      if (s.Step(&st)) {
        h.unanswered = s.Int(0);
        h.first_unanswered_at = s.OptTime(1);
      }
      CORTEX_RETURN_IF_ERROR(st);
    }
    // Our message to them, or theirs awaiting a reply, is an earlier episode already. Else
    // an older message of theirs, the likelier (one seek), and only then the other kinds
    // (a seek each): a first contact costs three seeks more.
    h.any_earlier = sent || h.unanswered > 0;
    for (const char* sql : {triage_sql::kEarlierReceived, triage_sql::EarlierOther().c_str()}) {
      if (h.any_earlier) break;
      Stmt s = c_.Prepare(sql);
      s.Bind(1, ws).Bind(2, entity_id).Bind(3, t);
      h.any_earlier = s.Step(&st);
      CORTEX_RETURN_IF_ERROR(st);
    }
    return h;
  }

  Result<int64_t> CountThreadEpisodes(const std::string& ws, const std::string& thread,
                                      TimePoint from, TimePoint to) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(triage_sql::kThreadCount);
    s.Bind(1, ws).Bind(2, thread).Bind(3, from).Bind(4, to);
    Status st;
    int64_t n = s.Step(&st) ? s.Int(0) : 0;
    CORTEX_RETURN_IF_ERROR(st);
    return n;
  }

  Result<WorkspaceSettings> GetSettings(const std::string& ws) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    return Remembered(&StableRows::settings, ws, [&]() -> Result<WorkspaceSettings> {
      Stmt s = c_.Prepare("SELECT settings FROM workspaces WHERE id = ?");
      s.Bind(1, ws);
      Status st;
      if (!s.Step(&st)) return st.ok() ? Status::NotFound("no workspace " + ws) : st;
      return SettingsFromJson(ParseJson(s.Text(0)));
    });
  }

  Result<std::vector<Rule>> ListRules(const std::string& ws, bool active_only) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    // Sorted here, not by ORDER BY: the index gives (active, position) but not the id that
    // breaks ties, so SQLite sorted in a temporary b-tree, which cost more than reading the
    // rules (this runs once per message triaged and per action).
    Stmt s =
        c_.Prepare(kRuleSelect + std::string(active_only ? " WHERE workspace_id = ? AND active = 1"
                                                         : " WHERE workspace_id = ?"));
    s.Bind(1, ws);
    std::vector<Rule> out;
    Status st;
    while (s.Step(&st)) out.push_back(RuleRow(s));
    CORTEX_RETURN_IF_ERROR(st);
    std::sort(out.begin(), out.end(), [](const Rule& a, const Rule& b) {  // active ones first
      return std::make_tuple(!a.active, a.position, std::cref(a.id)) <
             std::make_tuple(!b.active, b.position, std::cref(b.id));
    });
    return out;
  }

  Result<Rule> GetRule(const std::string& ws, const std::string& id) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(kRuleSelect + std::string(" WHERE workspace_id = ? AND id = ?"));
    s.Bind(1, ws).Bind(2, id);
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::NotFound("no rule " + id) : st;
    return RuleRow(s);
  }

  Result<Decision> GetDecision(const std::string& ws, const std::string& id) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(kDecisionSelect + std::string(" WHERE id = ? AND workspace_id = ?"));
    s.Bind(1, id).Bind(2, ws);
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::NotFound("no decision " + id) : st;
    return DecisionRow(s);
  }

  Result<std::vector<Decision>> ListDecisions(const std::string& ws, const DecisionFilter& f,
                                              int limit) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    std::vector<Decision> out;
    if (!f.decision_class && (f.entity_id || !f.status)) {
      // Decisions of any class, of a counterparty or of the whole workspace: the newest of
      // each class (a range of decisions_by_entity_class or decisions_by_class apiece),
      // merged. Indexes of their own for these lists cost every decision two more pages
      // to write, one of them at a random place (migration 10).
      for (const char* cls : kDecisionClasses) {
        // (Not the classes that never have the status asked: their range would be walked
        // to its end, row by row, to find nothing.)
        if (f.status && !DecisionClassMayHaveStatus(cls, *f.status)) continue;
        CORTEX_RETURN_IF_ERROR(AppendDecisions(ws, f, cls, limit, out));
      }
      std::sort(out.begin(), out.end(),
                [](const Decision& a, const Decision& b) { return a.id > b.id; });
      if (out.size() > static_cast<size_t>(limit)) out.resize(limit);
      return out;
    }
    if (f.decision_class && f.status) {
      // A class never has the statuses DecisionClassMayHaveStatus rules out (nothing to
      // walk a range for), and every class but proposals has one status only: the class's
      // range alone answers.
      if (!DecisionClassMayHaveStatus(*f.decision_class, *f.status)) return out;
      if (*f.decision_class != "action_proposed") {
        DecisionFilter by_class = f;
        by_class.status.reset();
        CORTEX_RETURN_IF_ERROR(AppendDecisions(ws, by_class, f.decision_class, limit, out));
        return out;
      }
    }
    CORTEX_RETURN_IF_ERROR(AppendDecisions(ws, f, f.decision_class, limit, out));
    return out;
  }

  // Appends the newest `limit` decisions that pass `f`, of class `cls` if it is set.
  Status AppendDecisions(const std::string& ws, const DecisionFilter& f,
                         const std::optional<std::string>& cls, int limit,
                         std::vector<Decision>& out) {
    std::string sql = kDecisionSelect + std::string(" WHERE workspace_id = ?");
    if (cls) sql += " AND class = ?";
    if (f.status) sql += " AND status = ?";
    if (f.entity_id) sql += " AND entity_id = ?";
    if (f.min_id) sql += " AND id >= ?";
    if (f.max_id) sql += " AND id < ?";
    sql += " ORDER BY id DESC LIMIT ?";
    Stmt s = c_.Prepare(sql);
    int i = 1;
    s.Bind(i++, ws);
    if (cls) s.Bind(i++, *cls);
    if (f.status) s.Bind(i++, *f.status);
    if (f.entity_id) s.Bind(i++, *f.entity_id);
    if (f.min_id) s.Bind(i++, *f.min_id);
    if (f.max_id) s.Bind(i++, *f.max_id);
    s.Bind(i++, static_cast<int64_t>(limit));
    Status st;
    while (s.Step(&st)) out.push_back(DecisionRow(s));
    return st;
  }

  Result<std::vector<TriageLink>> RecentTriage(const std::string& ws, const std::string& entity_id,
                                               const std::string& min_id, int limit) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(
        "SELECT id, rule_id, rule_summary, confidence, source_episode_ids, details"
        " FROM decisions WHERE workspace_id = ? AND entity_id = ? AND class = 'triage'"
        " AND id >= ? ORDER BY id DESC LIMIT ?");
    s.Bind(1, ws).Bind(2, entity_id).Bind(3, min_id).Bind(4, static_cast<int64_t>(limit));
    std::vector<TriageLink> out;
    Status st;
    while (s.Step(&st)) {
      TriageLink t;
      t.decision_id = s.Text(0);
      t.rule_id = s.OptText(1);
      t.rule_summary = s.OptText(2);
      t.confidence = s.Text(3);
      t.source_episode_ids = ParseStoredJson(s.Text(4)).get<std::vector<std::string>>();
      t.triage_class = ParseStoredJson(s.Text(5)).value("triage_class", "");
      out.push_back(std::move(t));
    }
    if (!st.ok()) return st;
    return out;
  }

  Result<Notification> GetNotification(const std::string& ws, const std::string& id) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(kNotificationSelect + std::string(" WHERE id = ? AND workspace_id = ?"));
    s.Bind(1, id).Bind(2, ws);
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::NotFound("no notification " + id) : st;
    return NotificationRow(s);
  }

  Result<std::vector<Notification>> ListNotifications(const std::string& ws,
                                                      const std::optional<std::string>& cls,
                                                      std::optional<TimePoint> after,
                                                      std::optional<TimePoint> until, int limit,
                                                      bool newest_first) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    std::vector<Notification> out;
    if (cls) {
      CORTEX_RETURN_IF_ERROR(AppendNotifications(ws, *cls, after, until, limit, newest_first, out));
      return out;
    }
    // Any class: the first of each class (a range of notifications_by_class apiece), merged
    // (migration 10, as for decisions).
    for (const char* c : kTriageClasses) {
      CORTEX_RETURN_IF_ERROR(AppendNotifications(ws, c, after, until, limit, newest_first, out));
    }
    auto key = [](const Notification& n) { return std::tie(*n.surface_at, n.id); };
    std::sort(out.begin(), out.end(), [&](const Notification& a, const Notification& b) {
      return newest_first ? key(a) > key(b) : key(a) < key(b);
    });
    if (out.size() > static_cast<size_t>(limit)) out.resize(limit);
    return out;
  }

  // Appends the first `limit` surfacing notifications of class `cls` in (after, until], by
  // surfacing time and id.
  Status AppendNotifications(const std::string& ws, const std::string& cls,
                             std::optional<TimePoint> after, std::optional<TimePoint> until,
                             int limit, bool newest_first, std::vector<Notification>& out) {
    std::string sql = kNotificationSelect + std::string(
                                                " WHERE workspace_id = ? AND triage_class = ?"
                                                " AND surface_at IS NOT NULL");
    if (after) sql += " AND surface_at > ?";
    if (until) sql += " AND surface_at <= ?";
    sql += newest_first ? " ORDER BY surface_at DESC, id DESC" : " ORDER BY surface_at, id";
    sql += " LIMIT ?";
    Stmt s = c_.Prepare(sql);
    int i = 1;
    s.Bind(i++, ws);
    s.Bind(i++, cls);
    if (after) s.Bind(i++, *after);
    if (until) s.Bind(i++, *until);
    s.Bind(i++, static_cast<int64_t>(limit));
    Status st;
    while (s.Step(&st)) out.push_back(NotificationRow(s));
    return st;
  }

  // --- writes ---

  Status InsertWorkspace(const Workspace& w) override {
    Stmt s = c_.Prepare(
        "INSERT INTO workspaces (id, name, world_version, agent_version, created_at) "
        "VALUES (?, ?, ?, ?, ?)");
    return s.Bind(1, w.id)
        .Bind(2, w.name)
        .Bind(3, w.world_version)
        .Bind(4, w.agent_version)
        .Bind(5, w.created_at)
        .Run();
  }

  Status SetWorldVersion(const std::string& ws, const std::string& wv) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare("UPDATE workspaces SET world_version = ? WHERE id = ?");
    return s.Bind(1, wv).Bind(2, ws).Run();
  }

  Status SetAgentVersion(const std::string& ws, const std::string& av) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare("UPDATE workspaces SET agent_version = ? WHERE id = ?");
    return s.Bind(1, av).Bind(2, ws).Run();
  }

  Status InsertToken(const TokenRecord& t) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(t.workspace_id));
    Stmt s = c_.Prepare(
        "INSERT INTO tokens (id, workspace_id, hash, label, scopes, created_at, revoked_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)");
    return s.Bind(1, t.id)
        .Bind(2, t.workspace_id)
        .Bind(3, t.hash)
        .Bind(4, t.label)
        .Bind(5, static_cast<int64_t>(t.scopes))
        .Bind(6, t.created_at)
        .Bind(7, t.revoked_at)
        .Run();
  }

  Status RevokeToken(const std::string& ws, const std::string& token_id, TimePoint at) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(
        "UPDATE tokens SET revoked_at = ? "
        "WHERE workspace_id = ? AND id = ? AND revoked_at IS NULL");
    CORTEX_RETURN_IF_ERROR(s.Bind(1, at).Bind(2, ws).Bind(3, token_id).Run());
    return Changes() == 1 ? Status::Ok()
                          : Status::NotFound("no active token " + token_id + " in workspace");
  }

  Status InsertEntity(const Entity& e) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(e.workspace_id));
    Stmt s = c_.Prepare(
        "INSERT INTO entities (id, workspace_id, kind, name, created_at) VALUES (?, ?, ?, ?, ?)");
    CORTEX_RETURN_IF_ERROR(s.Bind(1, e.id)
                               .Bind(2, e.workspace_id)
                               .Bind(3, e.kind)
                               .Bind(4, e.name)
                               .Bind(5, e.created_at)
                               .Run());
    ++uncounted_[e.workspace_id].entities;
    for (const std::string& ident : e.identifiers) {
      CORTEX_RETURN_IF_ERROR(AddEntityIdentifier(e.workspace_id, e.id, ident));
    }
    for (const std::string& tag : e.tags) {
      CORTEX_RETURN_IF_ERROR(AddEntityTag(e.workspace_id, e.id, tag));
    }
    return Status::Ok();
  }

  Status AddEntityIdentifier(const std::string& ws, const std::string& entity_id,
                             const std::string& identifier) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(
        "INSERT INTO entity_identifiers (workspace_id, identifier, entity_id) VALUES (?, ?, ?)");
    return s.Bind(1, ws).Bind(2, identifier).Bind(3, entity_id).Run();
  }

  Status AddEntityTag(const std::string& ws, const std::string& entity_id,
                      const std::string& tag) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    // The workspace check keeps a caller from tagging another workspace's entity.
    Stmt s = c_.Prepare(
        "INSERT INTO entity_tags (entity_id, tag) "
        "SELECT id, CAST(? AS TEXT) FROM entities WHERE workspace_id = ? AND id = ?"
        " ON CONFLICT DO NOTHING");
    return s.Bind(1, tag).Bind(2, ws).Bind(3, entity_id).Run();
  }

  Status SetEntityName(const std::string& ws, const std::string& entity_id,
                       const std::string& name) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare("UPDATE entities SET name = ? WHERE workspace_id = ? AND id = ?");
    return s.Bind(1, name).Bind(2, ws).Bind(3, entity_id).Run();
  }

  Status InsertEpisode(const Episode& e) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(e.workspace_id));
    Stmt s = c_.Prepare(
        "INSERT INTO episodes (id, workspace_id, kind, occurred_at, ends_at, entity_id, "
        "channel, subject, summary, body, thread, external_id, world_version, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    CORTEX_RETURN_IF_ERROR(s.Bind(1, e.id)
                               .Bind(2, e.workspace_id)
                               .Bind(3, e.kind)
                               .Bind(4, e.occurred_at)
                               .Bind(5, e.ends_at)
                               .Bind(6, e.entity_id)
                               .Bind(7, e.channel)
                               .Bind(8, e.subject)
                               .Bind(9, e.summary)
                               .Bind(10, e.body)
                               .Bind(11, e.thread)
                               .Bind(12, e.external_id)
                               .Bind(13, e.world_version)
                               .Bind(14, e.created_at)
                               .Run());
    ++uncounted_[e.workspace_id].episodes;
    if (e.kind == "calendar_block") {
      auto it = blocks_.find(e.workspace_id);
      if (it != blocks_.end()) it->second.Hold(e);
    }
    return Status::Ok();
  }

  Status SetSettings(const std::string& ws, const WorkspaceSettings& settings) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    std::string text = DumpJson(SettingsToJson(settings));
    Stmt s = c_.Prepare("UPDATE workspaces SET settings = ? WHERE id = ?");
    return s.Bind(1, text).Bind(2, ws).Run();
  }

  Status InsertRule(const Rule& r) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(r.workspace_id));
    std::string definition = DumpJson(RuleDefinitionJson(r));
    std::string evidence = DumpJson(nlohmann::json(r.evidence));
    Stmt s = c_.Prepare(
        "INSERT INTO rules (id, workspace_id, name, origin, summary, definition, position,"
        " evidence, support, contradictions, hits, active, created_at, retired_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)");
    return s.Bind(1, r.id)
        .Bind(2, r.workspace_id)
        .Bind(3, r.name)
        .Bind(4, r.origin)
        .Bind(5, r.summary)
        .Bind(6, definition)
        .Bind(7, static_cast<int64_t>(r.position))
        .Bind(8, evidence)
        .Bind(9, r.support)
        .Bind(10, r.contradictions)
        .Bind(11, r.hits)
        .Bind(12, static_cast<int64_t>(r.active ? 1 : 0))
        .Bind(13, r.created_at)
        .Run();
  }

  Status RetireRule(const std::string& ws, const std::string& id, TimePoint at) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s =
        c_.Prepare("UPDATE rules SET active = 0, retired_at = ? WHERE workspace_id = ? AND id = ?");
    return s.Bind(1, at).Bind(2, ws).Bind(3, id).Run();
  }

  Status SetRulePosition(const std::string& ws, const std::string& id, int position) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare("UPDATE rules SET position = ? WHERE workspace_id = ? AND id = ?");
    return s.Bind(1, static_cast<int64_t>(position)).Bind(2, ws).Bind(3, id).Run();
  }

  Status AddRuleHits(const std::string& ws, const std::string& id, int64_t n) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare("UPDATE rules SET hits = hits + ? WHERE workspace_id = ? AND id = ?");
    return s.Bind(1, n).Bind(2, ws).Bind(3, id).Run();
  }

  Status InsertDecision(const Decision& d) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(d.workspace_id));
    if (!IsOneOf(kDecisionClasses, d.decision_class)) {
      return Status::Internal("a decision of unknown class '" + d.decision_class + "'");
    }
    if (!DecisionClassMayHaveStatus(d.decision_class, d.status)) {
      return Status::Internal("a " + d.decision_class + " decision cannot be " + d.status);
    }
    std::string sources = DumpJson(nlohmann::json(d.source_episode_ids));
    Stmt s = c_.Prepare(
        "INSERT INTO decisions (id, workspace_id, class, status, occurred_at, entity_id,"
        " payload_summary, rule_id, rule_summary, confidence, trace_id, agent_version,"
        " world_version, source_episode_ids, details, notification_id, triage_decision_id,"
        " ledger_entry_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    return s.Bind(1, d.id)
        .Bind(2, d.workspace_id)
        .Bind(3, d.decision_class)
        .Bind(4, d.status)
        .Bind(5, d.occurred_at)
        .Bind(6, d.entity_id)
        .Bind(7, d.payload_summary)
        .Bind(8, d.rule_id)
        .Bind(9, d.rule_summary)
        .Bind(10, d.confidence)
        .Bind(11, d.trace_id)
        .Bind(12, d.agent_version)
        .Bind(13, d.world_version)
        .Bind(14, sources)
        .Bind(15, d.details_json)
        .Bind(16, d.notification_id)
        .Bind(17, d.triage_decision_id)
        .Bind(18, d.ledger_entry_id)
        .Run();
  }

  Status InsertNotification(const Notification& n) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(n.workspace_id));
    if (!IsOneOf(kTriageClasses, n.triage_class)) {
      return Status::Internal("a notification of unknown class '" + n.triage_class + "'");
    }
    Stmt s = c_.Prepare(
        "INSERT INTO notifications (id, workspace_id, episode_id, decision_id, entity_id,"
        " triage_class, surface_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    return s.Bind(1, n.id)
        .Bind(2, n.workspace_id)
        .Bind(3, n.episode_id)
        .Bind(4, n.decision_id)
        .Bind(5, n.entity_id)
        .Bind(6, n.triage_class)
        .Bind(7, n.surface_at)
        .Bind(8, n.created_at)
        .Run();
  }

 private:
  // `read()`'s row for `key`, from the connection's remembered rows when it keeps them
  // (SqlConn::Stable); a row read is remembered, a miss or an error is not.
  template <typename T, typename ReadRow>
  Result<T> Remembered(std::unordered_map<std::string, T> StableRows::*map, const std::string& key,
                       ReadRow read) {
    StableRows* stable = c_.Stable();
    if (stable == nullptr) return read();
    auto& rows = stable->*map;
    if (auto it = rows.find(key); it != rows.end()) return it->second;
    Result<T> row = read();
    if (row.ok()) {
      if (rows.size() >= StableRows::kMaxPerMap) rows.clear();
      rows.emplace(key, *row);
    }
    return row;
  }

  static Episode EpisodeRow(const Stmt& s) {
    Episode e;
    e.id = s.Text(0);
    e.workspace_id = s.Text(1);
    e.kind = s.Text(2);
    e.occurred_at = s.Time(3);
    e.ends_at = s.OptTime(4);
    e.entity_id = s.OptText(5);
    e.channel = s.Text(6);
    e.subject = s.Text(7);
    e.summary = s.Text(8);
    e.body = s.Text(9);
    e.thread = s.Text(10);
    e.external_id = s.OptText(11);
    e.world_version = s.Text(12);
    e.created_at = s.Time(13);
    return e;
  }

  static constexpr const char* kRuleSelect =
      "SELECT id, workspace_id, name, origin, summary, definition, position, evidence, support,"
      " contradictions, hits, active, created_at FROM rules";
  static Rule RuleRow(const Stmt& s) {
    Rule r;
    r.id = s.Text(0);
    r.workspace_id = s.Text(1);
    r.name = s.Text(2);
    r.origin = s.Text(3);
    r.summary = s.Text(4);
    ApplyRuleDefinitionJson(ParseStoredJson(s.Text(5)), &r);
    r.position = static_cast<int>(s.Int(6));
    r.evidence = ParseStoredJson(s.Text(7)).get<std::vector<std::string>>();
    r.support = s.Int(8);
    r.contradictions = s.Int(9);
    r.hits = s.Int(10);
    r.active = s.Int(11) != 0;
    r.created_at = s.Time(12);
    return r;
  }

  static constexpr const char* kDecisionSelect =
      "SELECT id, workspace_id, class, status, occurred_at, entity_id, payload_summary, rule_id,"
      " rule_summary, confidence, trace_id, agent_version, world_version, source_episode_ids,"
      " details, notification_id, triage_decision_id, ledger_entry_id FROM decisions";
  static Decision DecisionRow(const Stmt& s) {
    Decision d;
    d.id = s.Text(0);
    d.workspace_id = s.Text(1);
    d.decision_class = s.Text(2);
    d.status = s.Text(3);
    d.occurred_at = s.Time(4);
    d.entity_id = s.OptText(5);
    d.payload_summary = s.Text(6);
    d.rule_id = s.OptText(7);
    d.rule_summary = s.OptText(8);
    d.confidence = s.Text(9);
    d.trace_id = s.Text(10);
    d.agent_version = s.Text(11);
    d.world_version = s.Text(12);
    d.source_episode_ids = ParseStoredJson(s.Text(13)).get<std::vector<std::string>>();
    d.details_json = s.Text(14);
    d.notification_id = s.OptText(15);
    d.triage_decision_id = s.OptText(16);
    d.ledger_entry_id = s.OptText(17);
    return d;
  }

  static constexpr const char* kNotificationSelect =
      "SELECT id, workspace_id, episode_id, decision_id, entity_id, triage_class, surface_at,"
      " created_at FROM notifications";
  static Notification NotificationRow(const Stmt& s) {
    return Notification{s.Text(0),    s.Text(1), s.Text(2),    s.Text(3),
                        s.OptText(4), s.Text(5), s.OptTime(6), s.Time(7)};
  }

  static constexpr const char* kActionSelect =
      "SELECT id, workspace_id, action_class, entity_id, recipient, status, level, urgent,"
      " message, tone, context, draft, decision_id, due_at, created_at, updated_at FROM actions";
  static Action ActionRow(const Stmt& s) {
    Action a;
    a.id = s.Text(0);
    a.workspace_id = s.Text(1);
    a.action_class = s.Text(2);
    a.entity_id = s.Text(3);
    a.recipient = s.Text(4);
    a.status = s.Text(5);
    a.level = static_cast<int>(s.Int(6));
    a.urgent = s.Int(7) != 0;
    a.message = s.Text(8);
    a.tone = s.Text(9);
    a.context = s.Text(10);
    a.draft = s.Text(11);
    a.decision_id = s.Text(12);
    a.due_at = s.OptTime(13);
    a.created_at = s.Time(14);
    a.updated_at = s.Time(15);
    return a;
  }

  static constexpr const char* kLedgerSelect =
      "SELECT id, workspace_id, seq, action_id, decision_id, event, occurred_at, provenance,"
      " detail, prev_hash, hash FROM ledger";
  static LedgerEntry LedgerRow(const Stmt& s) {
    LedgerEntry e;
    e.id = s.Text(0);
    e.workspace_id = s.Text(1);
    e.seq = s.Int(2);
    e.action_id = s.Text(3);
    e.decision_id = s.Text(4);
    e.event = s.Text(5);
    e.occurred_at = s.Time(6);
    // A tampered row may not even be JSON: keep what is there, verification will say so.
    e.provenance = ParseJson(s.Text(7));
    e.detail = ParseJson(s.Text(8));
    e.prev_hash = s.Text(9);
    e.hash = s.Text(10);
    return e;
  }

  static constexpr const char* kOutboxSelect =
      "SELECT action_id, workspace_id, recipient, body, status, attempts, next_attempt_at,"
      " last_error, created_at FROM outbox";
  static OutboxItem OutboxRow(const Stmt& s) {
    OutboxItem o;
    o.action_id = s.Text(0);
    o.workspace_id = s.Text(1);
    o.recipient = s.Text(2);
    o.body = s.Text(3);
    o.status = s.Text(4);
    o.attempts = static_cast<int>(s.Int(5));
    o.next_attempt_at = s.Time(6);
    o.last_error = s.Text(7);
    o.created_at = s.Time(8);
    return o;
  }

 public:
  Result<Action> GetAction(const std::string& ws, const std::string& id) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(kActionSelect + std::string(" WHERE id = ? AND workspace_id = ?"));
    s.Bind(1, id).Bind(2, ws);
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::NotFound("no action " + id) : st;
    return ActionRow(s);
  }

  Result<Action> FindActionByDecision(const std::string& ws,
                                      const std::string& decision_id) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(kActionSelect + std::string(" WHERE workspace_id = ? AND decision_id = ?"));
    s.Bind(1, ws).Bind(2, decision_id);
    Status st;
    if (!s.Step(&st))
      return st.ok() ? Status::NotFound("no action for decision " + decision_id) : st;
    return ActionRow(s);
  }

  Result<std::vector<Action>> DueActions(TimePoint t, int limit) override {
    Stmt s = c_.Prepare(
        kActionSelect +
        std::string(" WHERE due_at IS NOT NULL AND due_at <= ? ORDER BY due_at LIMIT ?"));
    s.Bind(1, t).Bind(2, static_cast<int64_t>(limit));
    std::vector<Action> out;
    Status st;
    while (s.Step(&st)) out.push_back(ActionRow(s));
    CORTEX_RETURN_IF_ERROR(st);
    return out;
  }

  Result<std::vector<TrustSetting>> ListTrust(const std::string& ws) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(
        "SELECT action_class, scope, level, ceiling, updated_at FROM trust WHERE workspace_id = ?"
        " ORDER BY action_class, scope");
    s.Bind(1, ws);
    std::vector<TrustSetting> out;
    Status st;
    while (s.Step(&st)) {
      TrustSetting t;
      t.action_class = s.Text(0);
      t.scope = s.Text(1);
      if (!s.IsNull(2)) t.level = static_cast<int>(s.Int(2));
      if (!s.IsNull(3)) t.ceiling = static_cast<int>(s.Int(3));
      t.updated_at = s.Time(4);
      out.push_back(std::move(t));
    }
    CORTEX_RETURN_IF_ERROR(st);
    return out;
  }

  Result<TrustStreak> GetTrustStreak(const std::string& ws, const std::string& cls,
                                     const std::string& entity_id) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(
        "SELECT streak, evidence FROM trust_streaks WHERE workspace_id = ? AND action_class = ?"
        " AND entity_id = ?");
    s.Bind(1, ws).Bind(2, cls).Bind(3, entity_id);
    Status st;
    TrustStreak out;
    if (s.Step(&st)) {
      out.streak = s.Int(0);
      out.evidence = ParseStoredJson(s.Text(1)).get<std::vector<std::string>>();
    }
    CORTEX_RETURN_IF_ERROR(st);
    return out;
  }

  Result<std::pair<int64_t, std::string>> LedgerAnchor(const std::string& ws) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare("SELECT ledger_seq, ledger_head FROM workspaces WHERE id = ?");
    s.Bind(1, ws);
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::NotFound("no workspace " + ws) : st;
    return std::make_pair(s.Int(0), s.Text(1));
  }

  Result<std::vector<LedgerEntry>> ListLedger(const std::string& ws, int64_t after_seq,
                                              int limit) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(kLedgerSelect +
                        std::string(" WHERE workspace_id = ? AND seq > ? ORDER BY seq LIMIT ?"));
    s.Bind(1, ws).Bind(2, after_seq).Bind(3, static_cast<int64_t>(limit));
    std::vector<LedgerEntry> out;
    Status st;
    while (s.Step(&st)) out.push_back(LedgerRow(s));
    CORTEX_RETURN_IF_ERROR(st);
    return out;
  }

  Result<std::vector<LedgerEntry>> ListActionLedger(const std::string& ws,
                                                    const std::string& action_id) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(kLedgerSelect +
                        std::string(" WHERE workspace_id = ? AND action_id = ? ORDER BY seq"));
    s.Bind(1, ws).Bind(2, action_id);
    std::vector<LedgerEntry> out;
    Status st;
    while (s.Step(&st)) out.push_back(LedgerRow(s));
    CORTEX_RETURN_IF_ERROR(st);
    return out;
  }

  Result<std::vector<OutboxItem>> DueOutbox(TimePoint t, int limit) override {
    Stmt s =
        c_.Prepare(kOutboxSelect + std::string(" WHERE status = 'pending' AND next_attempt_at <= ?"
                                               " AND (lease_until IS NULL OR lease_until <= ?)"
                                               " ORDER BY next_attempt_at LIMIT ?"));
    s.Bind(1, t).Bind(2, t).Bind(3, static_cast<int64_t>(limit));
    std::vector<OutboxItem> out;
    Status st;
    while (s.Step(&st)) out.push_back(OutboxRow(s));
    CORTEX_RETURN_IF_ERROR(st);
    return out;
  }

  Result<InferenceUse> InferenceUnits(const std::string& ws, const std::string& token_id,
                                      const std::string& day) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(
        "SELECT COALESCE(SUM(units), 0), COALESCE(SUM(units) FILTER (WHERE token_id = ?), 0)"
        " FROM inference_usage WHERE workspace_id = ? AND day = ?");
    s.Bind(1, token_id).Bind(2, ws).Bind(3, day);
    Status st;
    InferenceUse use;
    if (s.Step(&st)) use = {s.Int(0), s.Int(1)};
    CORTEX_RETURN_IF_ERROR(st);
    return use;
  }

  Status AddInferenceUnits(const std::string& ws, const std::string& token_id,
                           const std::string& day, int64_t units) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(
        "INSERT INTO inference_usage (workspace_id, day, token_id, units) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (workspace_id, day, token_id) DO UPDATE SET units = inference_usage.units + "
        "excluded.units");
    return s.Bind(1, ws).Bind(2, day).Bind(3, token_id).Bind(4, units).Run();
  }

  Result<std::vector<std::pair<std::string, int64_t>>> QuotaOverrides(
      const std::string& ws) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    using Overrides = std::vector<std::pair<std::string, int64_t>>;
    return Remembered(&StableRows::quotas, ws, [&]() -> Result<Overrides> {
      Stmt s =
          c_.Prepare("SELECT name, value FROM quota_limits WHERE workspace_id = ? ORDER BY name");
      s.Bind(1, ws);
      Overrides out;
      Status st;
      while (s.Step(&st)) out.emplace_back(s.Text(0), s.Int(1));
      CORTEX_RETURN_IF_ERROR(st);
      return out;
    });
  }

  Status SetQuotaOverride(const std::string& ws, const std::string& name,
                          std::optional<int64_t> value) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    if (!value) {
      Stmt s = c_.Prepare("DELETE FROM quota_limits WHERE workspace_id = ? AND name = ?");
      return s.Bind(1, ws).Bind(2, name).Run();
    }
    Stmt s = c_.Prepare(
        "INSERT INTO quota_limits (workspace_id, name, value) VALUES (?, ?, ?)"
        " ON CONFLICT (workspace_id, name) DO UPDATE SET value = excluded.value");
    return s.Bind(1, ws).Bind(2, name).Bind(3, *value).Run();
  }

  Result<std::vector<nlohmann::json>> ListDeliveredMessages(const std::string& ws) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(
        "SELECT action_id, recipient, body, delivered_at FROM delivered_messages"
        " WHERE workspace_id = ? ORDER BY delivered_at, action_id");
    s.Bind(1, ws);
    std::vector<nlohmann::json> out;
    Status st;
    while (s.Step(&st)) {
      out.push_back({{"action_id", s.Text(0)},
                     {"recipient", s.Text(1)},
                     {"body", s.Text(2)},
                     {"delivered_at", FormatTime(s.Time(3))}});
    }
    CORTEX_RETURN_IF_ERROR(st);
    return out;
  }

  Result<std::optional<McpSession>> GetSession(const std::string& id) override {
    Stmt s =
        c_.Prepare("SELECT id, workspace_id, created_at, last_used FROM mcp_sessions WHERE id = ?");
    s.Bind(1, id);
    Status st;
    if (!s.Step(&st)) {
      if (!st.ok()) return st;
      return std::optional<McpSession>();
    }
    return std::optional(McpSession{s.Text(0), s.Text(1), s.Time(2), s.Time(3)});
  }

  Result<int64_t> CountSessions(TimePoint since) override {
    Stmt s = c_.Prepare("SELECT count(*) FROM mcp_sessions WHERE last_used >= ?");
    s.Bind(1, since);
    Status st;
    int64_t n = s.Step(&st) ? s.Int(0) : 0;
    CORTEX_RETURN_IF_ERROR(st);
    return n;
  }

  // Sessions take no workspace lock: opening or ending one never waits behind a long
  // write to the workspace.
  Status InsertSession(const McpSession& m) override {
    Stmt s = c_.Prepare(
        "INSERT INTO mcp_sessions (id, workspace_id, created_at, last_used) VALUES (?, ?, ?, ?)");
    return s.Bind(1, m.id).Bind(2, m.workspace_id).Bind(3, m.created_at).Bind(4, m.last_used).Run();
  }

  Status TouchSession(const std::string& id, TimePoint at) override {
    Stmt s = c_.Prepare("UPDATE mcp_sessions SET last_used = ? WHERE id = ? AND last_used < ?");
    return s.Bind(1, at).Bind(2, id).Bind(3, at).Run();
  }

  Result<bool> DeleteSession(const std::string& ws, const std::string& id) override {
    Stmt s = c_.Prepare("DELETE FROM mcp_sessions WHERE id = ? AND workspace_id = ?");
    CORTEX_RETURN_IF_ERROR(s.Bind(1, id).Bind(2, ws).Run());
    return Changes() == 1;
  }

  Status DeleteIdleSessions(TimePoint before) override {
    Stmt s = c_.Prepare("DELETE FROM mcp_sessions WHERE last_used < ?");
    return s.Bind(1, before).Run();
  }

  Result<CallCounts> CountCall(const std::string& ws, const std::string& token_id, int64_t minute,
                               int64_t day) override {
    // No Enter(ws): the upsert's row locks on the counters are all the serialization
    // counting needs.
    Stmt s = c_.Prepare(
        "INSERT INTO call_counts (workspace_id, subject, unit, period, calls) VALUES"
        " (?1, '*', 'minute', ?3, 1), (?1, '*', 'day', ?4, 1),"
        " (?1, ?2, 'minute', ?3, 1), (?1, ?2, 'day', ?4, 1)"
        " ON CONFLICT (workspace_id, subject, unit, period)"
        " DO UPDATE SET calls = call_counts.calls + 1 RETURNING subject, unit, calls");
    s.Bind(1, ws).Bind(2, token_id).Bind(3, minute).Bind(4, day);
    CallCounts out;
    Status st;
    while (s.Step(&st)) {
      bool workspace = s.Text(0) == "*", is_minute = s.Text(1) == "minute";
      int64_t& slot = workspace ? (is_minute ? out.workspace_minute : out.workspace_day)
                                : (is_minute ? out.token_minute : out.token_day);
      slot = s.Int(2);
    }
    CORTEX_RETURN_IF_ERROR(st);
    return out;
  }

  Status DeleteCallCountsBefore(int64_t minute, int64_t day) override {
    Stmt s = c_.Prepare(
        "DELETE FROM call_counts WHERE (unit = 'minute' AND period < ?)"
        " OR (unit = 'day' AND period < ?)");
    return s.Bind(1, minute).Bind(2, day).Run();
  }

  Status SetDecisionStatus(const std::string& ws, const std::string& id,
                           const std::string& status) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    // Only a proposal's status moves (DecisionClassMayHaveStatus).
    if (!DecisionClassMayHaveStatus("action_proposed", status)) {
      return Status::Internal("a decision cannot become " + status);
    }
    Stmt s = c_.Prepare(
        "UPDATE decisions SET status = ? WHERE id = ? AND workspace_id = ?"
        " AND class = 'action_proposed'");
    CORTEX_RETURN_IF_ERROR(s.Bind(1, status).Bind(2, id).Bind(3, ws).Run());
    return Changes() == 1 ? Status::Ok() : Status::Internal("no proposal " + id + " in workspace");
  }

  Status InsertAction(const Action& a) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(a.workspace_id));
    Stmt s = c_.Prepare(
        "INSERT INTO actions (id, workspace_id, action_class, entity_id, recipient, status, level,"
        " urgent, message, tone, context, draft, decision_id, due_at, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    return s.Bind(1, a.id)
        .Bind(2, a.workspace_id)
        .Bind(3, a.action_class)
        .Bind(4, a.entity_id)
        .Bind(5, a.recipient)
        .Bind(6, a.status)
        .Bind(7, static_cast<int64_t>(a.level))
        .Bind(8, static_cast<int64_t>(a.urgent ? 1 : 0))
        .Bind(9, a.message)
        .Bind(10, a.tone)
        .Bind(11, a.context)
        .Bind(12, a.draft)
        .Bind(13, a.decision_id)
        .Bind(14, a.due_at)
        .Bind(15, a.created_at)
        .Bind(16, a.updated_at)
        .Run();
  }

  Status TransitionAction(const std::string& ws, const std::string& id, const std::string& from,
                          const std::string& to, const std::optional<std::string>& draft,
                          TimePoint at) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(
        "UPDATE actions SET status = ?, draft = coalesce(?, draft), due_at = NULL, updated_at = ?"
        " WHERE id = ? AND workspace_id = ? AND status = ?");
    CORTEX_RETURN_IF_ERROR(
        s.Bind(1, to).Bind(2, draft).Bind(3, at).Bind(4, id).Bind(5, ws).Bind(6, from).Run());
    if (Changes() == 1) return Status::Ok();
    return Status::Conflict("action " + id + " is not " + from);
  }

  Status SetTrust(const std::string& ws, const TrustSetting& t) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    Stmt s = c_.Prepare(
        "INSERT INTO trust (workspace_id, action_class, scope, level, ceiling, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (workspace_id, action_class, scope) DO UPDATE"
        " SET level = excluded.level, ceiling = excluded.ceiling, updated_at = "
        "excluded.updated_at");
    std::optional<int64_t> level, ceiling;
    if (t.level) level = *t.level;
    if (t.ceiling) ceiling = *t.ceiling;
    return s.Bind(1, ws)
        .Bind(2, t.action_class)
        .Bind(3, t.scope)
        .Bind(4, level)
        .Bind(5, ceiling)
        .Bind(6, t.updated_at)
        .Run();
  }

  Status SetTrustStreak(const std::string& ws, const std::string& cls, const std::string& entity_id,
                        const TrustStreak& t) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(ws));
    std::string evidence = DumpJson(nlohmann::json(t.evidence));
    Stmt s = c_.Prepare(
        "INSERT INTO trust_streaks (workspace_id, action_class, entity_id, streak, evidence)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (workspace_id, action_class, entity_id) DO UPDATE"
        " SET streak = excluded.streak, evidence = excluded.evidence");
    return s.Bind(1, ws).Bind(2, cls).Bind(3, entity_id).Bind(4, t.streak).Bind(5, evidence).Run();
  }

  Status AppendLedger(const LedgerEntry& e, const std::string& provenance_json,
                      const std::string& detail_json) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(e.workspace_id));
    Stmt s = c_.Prepare(
        "INSERT INTO ledger (id, workspace_id, seq, action_id, decision_id, event, occurred_at,"
        " provenance, detail, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    Status st = s.Bind(1, e.id)
                    .Bind(2, e.workspace_id)
                    .Bind(3, e.seq)
                    .Bind(4, e.action_id)
                    .Bind(5, e.decision_id)
                    .Bind(6, e.event)
                    .Bind(7, e.occurred_at)
                    .Bind(8, provenance_json)
                    .Bind(9, detail_json)
                    .Bind(10, e.prev_hash)
                    .Bind(11, e.hash)
                    .Run();
    CORTEX_RETURN_IF_ERROR(st);
    Stmt anchor = c_.Prepare("UPDATE workspaces SET ledger_seq = ?, ledger_head = ? WHERE id = ?");
    return anchor.Bind(1, e.seq).Bind(2, e.hash).Bind(3, e.workspace_id).Run();
  }

  Status InsertOutbox(const OutboxItem& o) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(o.workspace_id));
    Stmt s = c_.Prepare(
        "INSERT INTO outbox (action_id, workspace_id, recipient, body, status, attempts,"
        " next_attempt_at, lease_until, last_error, created_at, delivered_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, NULL)");
    return s.Bind(1, o.action_id)
        .Bind(2, o.workspace_id)
        .Bind(3, o.recipient)
        .Bind(4, o.body)
        .Bind(5, o.status)
        .Bind(6, static_cast<int64_t>(o.attempts))
        .Bind(7, o.next_attempt_at)
        .Bind(8, o.last_error)
        .Bind(9, o.created_at)
        .Run();
  }

  Result<bool> LeaseOutbox(const OutboxItem& seen, TimePoint now, TimePoint lease_until) override {
    Stmt s = c_.Prepare(
        "UPDATE outbox SET lease_until = ? WHERE action_id = ? AND status = 'pending'"
        " AND attempts = ? AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)");
    CORTEX_RETURN_IF_ERROR(s.Bind(1, lease_until)
                               .Bind(2, seen.action_id)
                               .Bind(3, static_cast<int64_t>(seen.attempts))
                               .Bind(4, now)
                               .Bind(5, now)
                               .Run());
    return Changes() == 1;
  }

  Status UpdateOutbox(const OutboxItem& o, std::optional<TimePoint> delivered_at) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(o.workspace_id));
    Stmt s = c_.Prepare(
        "UPDATE outbox SET status = ?, attempts = ?, next_attempt_at = ?, last_error = ?,"
        " lease_until = NULL, delivered_at = ? WHERE action_id = ?");
    return s.Bind(1, o.status)
        .Bind(2, static_cast<int64_t>(o.attempts))
        .Bind(3, o.next_attempt_at)
        .Bind(4, o.last_error)
        .Bind(5, delivered_at)
        .Bind(6, o.action_id)
        .Run();
  }

  Result<bool> RecordDeliveredMessage(const OutboxItem& o, TimePoint at) override {
    CORTEX_RETURN_IF_ERROR(c_.Enter(o.workspace_id));
    Stmt s = c_.Prepare(
        "INSERT INTO delivered_messages (action_id, workspace_id, recipient, body,"
        " delivered_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
    CORTEX_RETURN_IF_ERROR(s.Bind(1, o.action_id)
                               .Bind(2, o.workspace_id)
                               .Bind(3, o.recipient)
                               .Bind(4, o.body)
                               .Bind(5, at)
                               .Run());
    return Changes() == 1;
  }

 private:
  int64_t Changes() { return c_.Changes(); }

  static Workspace WorkspaceRow(const Stmt& s) {
    return Workspace{s.Text(0), s.Text(1), s.Text(2), s.Text(3), s.Time(4)};
  }

  static Result<Workspace> ReadWorkspace(Stmt& s, const std::string& what) {
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::NotFound("no " + what) : st;
    return WorkspaceRow(s);
  }

  static TokenRecord TokenRow(const Stmt& s) {
    return TokenRecord{
        s.Text(0), s.Text(1),   s.Text(2), s.Text(3), static_cast<unsigned>(s.Int(4)),
        s.Time(5), s.OptTime(6)};
  }

  Status LoadEntityDetails(Entity* e) {
    // Sorted here: the index on entity_id orders identifiers only within a workspace, which
    // this look-up does not name, so an ORDER BY sorted the few of them in a temporary
    // b-tree on every look-up of a person.
    Stmt ids = c_.Prepare("SELECT identifier FROM entity_identifiers WHERE entity_id = ?");
    ids.Bind(1, e->id);
    Status st;
    while (ids.Step(&st)) e->identifiers.push_back(ids.Text(0));
    CORTEX_RETURN_IF_ERROR(st);
    std::sort(e->identifiers.begin(), e->identifiers.end());
    Stmt tags = c_.Prepare("SELECT tag FROM entity_tags WHERE entity_id = ? ORDER BY tag");
    tags.Bind(1, e->id);
    while (tags.Step(&st)) e->tags.push_back(tags.Text(0));
    return st;
  }

  static constexpr size_t kMaxHeldBlocks = 2048;
  static constexpr std::chrono::hours kBlockSpanMargin{24};

  // Calendar blocks this transaction has read for ActiveBlockAt, by workspace: every block
  // of the workspace begun in (from, to], by start (ties in the order stored).
  struct Blocks {
    bool asked = false;     // ActiveBlockAt has been called
    bool loaded = false;    // rows hold the span (from, to]
    bool too_many = false;  // the span held more than kMaxHeldBlocks: ask the database
    TimePoint from, to;
    std::vector<Episode> rows;

    void GiveUp() {
      too_many = true;
      rows = {};
    }
    // The first row begun after `t`.
    std::vector<Episode>::iterator After(TimePoint t) {
      return std::upper_bound(rows.begin(), rows.end(), t,
                              [](TimePoint v, const Episode& e) { return v < e.occurred_at; });
    }
    // As the database answers: of the blocks begun in (earliest_start, t] that end after
    // t, the latest-ending; of those, the latest begun; of identical ones, the last stored.
    std::optional<Episode> At(TimePoint t, TimePoint earliest_start) {
      const Episode* best = nullptr;
      for (auto it = After(t); it != rows.begin();) {
        --it;
        if (it->occurred_at <= earliest_start) break;
        if (!it->ends_at || *it->ends_at <= t) continue;
        if (best == nullptr || *it->ends_at > *best->ends_at) best = &*it;
      }
      return best == nullptr ? std::optional<Episode>() : std::optional<Episode>(*best);
    }
    // A block the transaction stored joins the rows if it began inside the span, as the
    // database holds it (times in whole milliseconds).
    void Hold(const Episode& e) {
      auto ms = [](TimePoint t) { return FromUnixMillis(ToUnixMillis(t)); };
      TimePoint start = ms(e.occurred_at);
      if (!loaded || too_many || start <= from || start > to) return;
      Episode row = e;
      row.occurred_at = start;
      if (row.ends_at) row.ends_at = ms(*row.ends_at);
      row.created_at = ms(row.created_at);
      rows.insert(After(start), std::move(row));
      if (rows.size() > kMaxHeldBlocks) GiveUp();
    }
  };

  // Widens the span read to cover (from, to], reading only the parts not read yet.
  Status WidenBlocks(const std::string& ws, TimePoint from, TimePoint to, Blocks* b) {
    if (!b->loaded) {
      std::vector<Episode> rows;
      CORTEX_RETURN_IF_ERROR(ReadBlocks(ws, from, to, &rows));
      b->rows = std::move(rows);
    } else {
      from = std::min(from, b->from);
      to = std::max(to, b->to);
      std::vector<Episode> before, after;
      if (from < b->from) CORTEX_RETURN_IF_ERROR(ReadBlocks(ws, from, b->from, &before));
      if (to > b->to) CORTEX_RETURN_IF_ERROR(ReadBlocks(ws, b->to, to, &after));
      b->rows.insert(b->rows.begin(), std::make_move_iterator(before.begin()),
                     std::make_move_iterator(before.end()));
      b->rows.insert(b->rows.end(), std::make_move_iterator(after.begin()),
                     std::make_move_iterator(after.end()));
    }
    b->loaded = true;
    b->from = from;
    b->to = to;
    if (b->rows.size() > kMaxHeldBlocks) b->GiveUp();
    return Status::Ok();
  }

  // Appends the blocks of `ws` begun in (from, to], by start (at most one past the limit).
  Status ReadBlocks(const std::string& ws, TimePoint from, TimePoint to,
                    std::vector<Episode>* rows) {
    Stmt s = c_.Prepare(triage_sql::BlocksBetween());
    s.Bind(1, ws).Bind(2, from).Bind(3, to).Bind(4, static_cast<int64_t>(kMaxHeldBlocks + 1));
    Status st;
    while (s.Step(&st)) rows->push_back(EpisodeRow(s));
    return st;
  }

  Result<std::optional<Episode>> ActiveBlockInDatabase(const std::string& ws, TimePoint t,
                                                       TimePoint earliest_start) {
    Status st;
    int64_t end = 0;
    {
      Stmt s = c_.Prepare(triage_sql::kActiveBlockEnd);
      s.Bind(1, ws).Bind(2, earliest_start).Bind(3, t).Bind(4, t);
      bool found = s.Step(&st) && !s.IsNull(0);
      CORTEX_RETURN_IF_ERROR(st);
      if (!found) return std::optional<Episode>();
      end = s.Int(0);
    }
    Stmt s = c_.Prepare(triage_sql::ActiveBlock());
    s.Bind(1, ws).Bind(2, earliest_start).Bind(3, t).Bind(4, end);
    if (!s.Step(&st)) {
      if (!st.ok()) return st;
      return Status::Internal("the active block vanished inside its transaction");
    }
    return std::optional<Episode>(EpisodeRow(s));
  }

  SqlConn& c_;
  std::unordered_map<std::string, Blocks> blocks_;
  // Inserted by this write and not yet added to the workspace row (FinishWrite).
  struct Uncounted {
    int64_t entities = 0;
    int64_t episodes = 0;
  };
  std::unordered_map<std::string, Uncounted> uncounted_;
};

}  // namespace

std::unique_ptr<SqlWriteTx> NewSqlTx(SqlConn& conn) { return std::make_unique<SqlTx>(conn); }

}  // namespace cortex
