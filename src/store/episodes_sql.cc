#include <algorithm>
#include <initializer_list>
#include <limits>

#include "store/episodes.h"
#include "store/sql_tx.h"

namespace cortex {

namespace {
// Every column of an episode, in the order EpisodeRow reads them.
constexpr const char* kEpisodeSelect =
    "SELECT id, workspace_id, kind, occurred_at, ends_at, entity_id, channel, subject,"
    " summary, body, thread, external_id, world_version, created_at FROM episodes";

Episode EpisodeRow(const Stmt& s) {
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

// The pieces of a statement, joined (GCC 12 warns, wrongly, on std::string + a literal).
std::string Concat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out += p;
  return out;
}

// A transaction's focus-block look-ups after its first read the blocks of the span asked
// about, with this margin either side (docs/performance.md).
constexpr std::chrono::hours kBlockSpanMargin{24};
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

// Of the blocks that began up to a horizon before the time, the latest end after it (an
// aggregate, not ORDER BY ends_at DESC LIMIT 1, which sorts in a temporary b-tree).
const char* const kActiveBlockEnd =
    "SELECT max(ends_at) FROM episodes WHERE workspace_id = ? AND kind = 'calendar_block'"
    " AND occurred_at > ? AND occurred_at <= ? AND ends_at > ?"
    " AND NOT EXISTS (SELECT 1 FROM episode_retractions r"
    " WHERE r.workspace_id = episodes.workspace_id AND r.episode_id = episodes.id)";

// Blocks begun in a span (after, until], read from episodes_blocks, that still stand (a
// moved or cancelled calendar event's episode is retracted, migration 26).
constexpr const char* kBlocksBegunIn =
    " WHERE workspace_id = ? AND kind = 'calendar_block' AND occurred_at > ?"
    " AND occurred_at <= ? AND NOT EXISTS (SELECT 1 FROM episode_retractions r"
    " WHERE r.workspace_id = episodes.workspace_id AND r.episode_id = episodes.id)";

// The block with that end (of several, the latest begun).
const std::string& ActiveBlock() {
  static const std::string sql = Concat(
      {kEpisodeSelect, kBlocksBegunIn, " AND ends_at = ? ORDER BY occurred_at DESC LIMIT 1"});
  return sql;
}

// The blocks begun in a span, by start.
const std::string& BlocksBetween() {
  static const std::string sql =
      Concat({kEpisodeSelect, kBlocksBegunIn, " ORDER BY occurred_at LIMIT ?"});
  return sql;
}

}  // namespace triage_sql

// --- HeldBlocks ---

void HeldBlocks::GiveUp() {
  too_many = true;
  rows = {};
}

std::vector<Episode>::const_iterator HeldBlocks::After(TimePoint t) const {
  return std::upper_bound(rows.begin(), rows.end(), t,
                          [](TimePoint v, const Episode& e) { return v < e.occurred_at; });
}

std::optional<Episode> HeldBlocks::At(TimePoint t, TimePoint earliest_start) const {
  const Episode* best = nullptr;
  for (auto it = After(t); it != rows.begin();) {
    --it;
    if (it->occurred_at <= earliest_start) break;
    if (!it->ends_at || *it->ends_at <= t) continue;
    if (best == nullptr || *it->ends_at > *best->ends_at) best = &*it;
  }
  return best == nullptr ? std::optional<Episode>() : std::optional<Episode>(*best);
}

void HeldBlocks::Hold(const Episode& e) {
  auto ms = [](TimePoint t) { return FromUnixMillis(ToUnixMillis(t)); };
  TimePoint start = ms(e.occurred_at);
  if (!loaded || too_many || start <= from || start > to) return;
  Episode row = e;
  row.occurred_at = start;
  if (row.ends_at) row.ends_at = ms(*row.ends_at);
  row.created_at = ms(row.created_at);
  rows.insert(After(start), std::move(row));
  if (rows.size() > kMaxHeld) GiveUp();
}

// --- reads ---

Result<Episode> EpisodesReader::Get(const std::string& ws, const std::string& id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  static const std::string sql = kEpisodeSelect + std::string(" WHERE workspace_id = ? AND id = ?");
  Stmt s = s_.conn.Prepare(sql);
  s.Bind(1, ws).Bind(2, id);
  return OneRow(s, "no episode " + id, EpisodeRow);
}

Result<EpisodeSummary> EpisodesReader::GetSummary(const std::string& ws, const std::string& id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT summary, occurred_at FROM episodes WHERE workspace_id = ? AND id = ?");
  s.Bind(1, ws).Bind(2, id);
  return OneRow(s, "no episode " + id, [&](const Stmt& r) {
    return EpisodeSummary{id, r.Text(0), r.Time(1)};
  });
}

Result<Episode> EpisodesReader::FindByExternalId(const std::string& ws,
                                                 const std::string& external_id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  static const std::string sql =
      kEpisodeSelect + std::string(" WHERE workspace_id = ? AND external_id = ?");
  Stmt s = s_.conn.Prepare(sql);
  s.Bind(1, ws).Bind(2, external_id);
  return OneRow(s, "no episode with external_id '" + external_id + "'", EpisodeRow);
}

Result<bool> EpisodesReader::ExternalIdExists(const std::string& ws,
                                              const std::string& external_id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare("SELECT 1 FROM episodes WHERE workspace_id = ? AND external_id = ?");
  s.Bind(1, ws).Bind(2, external_id);
  Status st;
  bool found = s.Step(&st);
  if (!st.ok()) return st;
  return found;
}

Result<std::optional<Episode>> EpisodesReader::ActiveBlockAt(const std::string& ws, TimePoint t,
                                                             TimePoint earliest_start) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  HeldBlocks& b = s_.blocks[ws];
  // The first look-up of a transaction (action.communicate, a one-line ingest) asks the
  // database. From the second on (a batch), the transaction reads the blocks of the span
  // asked about once and answers from memory; a look-up outside the span reads the part of
  // the wider span not yet read.
  if (!b.asked) {
    b.asked = true;
    return ActiveBlockInDatabase(ws, t, earliest_start);
  }
  if (!b.too_many && !(b.loaded && b.from <= earliest_start && t <= b.to)) {
    CORTEX_RETURN_IF_ERROR(
        WidenBlocks(ws, earliest_start - kBlockSpanMargin, t + kBlockSpanMargin));
  }
  if (b.too_many) return ActiveBlockInDatabase(ws, t, earliest_start);
  return b.At(t, earliest_start);
}

Status EpisodesReader::WidenBlocks(const std::string& ws, TimePoint from, TimePoint to) {
  HeldBlocks& b = s_.blocks[ws];
  if (!b.loaded) {
    std::vector<Episode> rows;
    CORTEX_RETURN_IF_ERROR(ReadBlocks(ws, from, to, &rows));
    b.rows = std::move(rows);
  } else {
    from = std::min(from, b.from);
    to = std::max(to, b.to);
    std::vector<Episode> before, after;
    if (from < b.from) CORTEX_RETURN_IF_ERROR(ReadBlocks(ws, from, b.from, &before));
    if (to > b.to) CORTEX_RETURN_IF_ERROR(ReadBlocks(ws, b.to, to, &after));
    b.rows.insert(b.rows.begin(), std::make_move_iterator(before.begin()),
                  std::make_move_iterator(before.end()));
    b.rows.insert(b.rows.end(), std::make_move_iterator(after.begin()),
                  std::make_move_iterator(after.end()));
  }
  b.loaded = true;
  b.from = from;
  b.to = to;
  if (b.rows.size() > HeldBlocks::kMaxHeld) b.GiveUp();
  return Status::Ok();
}

Status EpisodesReader::ReadBlocks(const std::string& ws, TimePoint from, TimePoint to,
                                  std::vector<Episode>* rows) {
  Stmt s = s_.conn.Prepare(triage_sql::BlocksBetween());
  s.Bind(1, ws).Bind(2, from).Bind(3, to).Bind(4, static_cast<int64_t>(HeldBlocks::kMaxHeld + 1));
  Status st;
  while (s.Step(&st)) rows->push_back(EpisodeRow(s));
  return st;
}

Result<std::optional<Episode>> EpisodesReader::ActiveBlockInDatabase(const std::string& ws,
                                                                     TimePoint t,
                                                                     TimePoint earliest_start) {
  Status st;
  int64_t end = 0;
  {
    Stmt s = s_.conn.Prepare(triage_sql::kActiveBlockEnd);
    s.Bind(1, ws).Bind(2, earliest_start).Bind(3, t).Bind(4, t);
    bool found = s.Step(&st) && !s.IsNull(0);
    CORTEX_RETURN_IF_ERROR(st);
    if (!found) return std::optional<Episode>();
    end = s.Int(0);
  }
  Stmt s = s_.conn.Prepare(triage_sql::ActiveBlock());
  s.Bind(1, ws).Bind(2, earliest_start).Bind(3, t).Bind(4, end);
  if (!s.Step(&st)) {
    if (!st.ok()) return st;
    return Status::Internal("the active block vanished inside its transaction");
  }
  return std::optional<Episode>(EpisodeRow(s));
}

Result<EpisodesReader::History> EpisodesReader::CounterpartyHistory(const std::string& ws,
                                                                    const std::string& entity_id,
                                                                    TimePoint t,
                                                                    TimePoint awaiting_since) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  History h;
  Status st;
  int64_t since = ToUnixMillis(awaiting_since);
  bool sent = false;
  {
    Stmt s = s_.conn.Prepare(triage_sql::kLastSent);
    s.Bind(1, ws).Bind(2, entity_id).Bind(3, t);
    if (s.Step(&st) && !s.IsNull(0)) {
      sent = true;
      since = std::max(since, s.Int(0));
    }
    CORTEX_RETURN_IF_ERROR(st);
  }
  {
    Stmt s = s_.conn.Prepare(triage_sql::kUnanswered);
    s.Bind(1, ws).Bind(2, entity_id).Bind(3, since).Bind(4, t);
    if (s.Step(&st)) {
      h.unanswered = s.Int(0);
      h.first_unanswered_at = s.OptTime(1);
    }
    CORTEX_RETURN_IF_ERROR(st);
  }
  // Our message to them, or theirs awaiting a reply, is an earlier episode already. Else
  // an older message of theirs, the likelier (one seek), and only then the other kinds
  // (a seek each).
  h.any_earlier = sent || h.unanswered > 0;
  for (const char* sql : {triage_sql::kEarlierReceived, triage_sql::EarlierOther().c_str()}) {
    if (h.any_earlier) break;
    Stmt s = s_.conn.Prepare(sql);
    s.Bind(1, ws).Bind(2, entity_id).Bind(3, t);
    h.any_earlier = s.Step(&st);
    CORTEX_RETURN_IF_ERROR(st);
  }
  return h;
}

Result<int64_t> EpisodesReader::CountInThread(const std::string& ws, const std::string& thread,
                                              TimePoint from, TimePoint to) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(triage_sql::kThreadCount);
  s.Bind(1, ws).Bind(2, thread).Bind(3, from).Bind(4, to);
  Status st;
  int64_t n = s.Step(&st) ? s.Int(0) : 0;
  CORTEX_RETURN_IF_ERROR(st);
  return n;
}

// --- writes ---

Status EpisodesWriter::Insert(const Episode& e) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(e.workspace_id));
  Stmt s = s_.conn.Prepare(
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
  ++s_.uncounted[e.workspace_id].episodes;
  if (e.kind == "calendar_block") {
    auto it = s_.blocks.find(e.workspace_id);
    if (it != s_.blocks.end()) it->second.Hold(e);
  }
  return Status::Ok();
}

Result<std::optional<std::string>> EpisodesReader::Cursor(const std::string& ws,
                                                          const std::string& source) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s =
      s_.conn.Prepare("SELECT cursor FROM ingest_cursors WHERE workspace_id = ? AND source = ?");
  s.Bind(1, ws).Bind(2, source);
  Status st;
  if (!s.Step(&st)) {
    if (!st.ok()) return st;
    return std::optional<std::string>();
  }
  return std::optional<std::string>(s.Text(0));
}

Status EpisodesWriter::SetCursor(const std::string& ws, const std::string& source,
                                 const std::string& cursor, TimePoint at) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO ingest_cursors (workspace_id, source, cursor, updated_at) VALUES (?, ?, ?, ?)"
      " ON CONFLICT (workspace_id, source) DO UPDATE SET cursor = excluded.cursor,"
      " updated_at = excluded.updated_at");
  return s.Bind(1, ws).Bind(2, source).Bind(3, cursor).Bind(4, at).Run();
}

Status EpisodesWriter::Retract(const std::string& ws, const std::string& episode_id, TimePoint at,
                               const std::string& reason) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO episode_retractions (workspace_id, episode_id, retracted_at, reason)"
      " VALUES (?, ?, ?, ?) ON CONFLICT (workspace_id, episode_id) DO NOTHING");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, ws).Bind(2, episode_id).Bind(3, at).Bind(4, reason).Run());
  // A transaction's held blocks (an ingest batch's look-ups) forget it too.
  auto it = s_.blocks.find(ws);
  if (it != s_.blocks.end())
    std::erase_if(it->second.rows, [&](const Episode& e) { return e.id == episode_id; });
  return Status::Ok();
}

Result<std::vector<MessageFact>> EpisodesReader::MessagesSince(const std::string& ws,
                                                               TimePoint since) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  // SQLite walks episodes_by_entity_kind over every episode of the workspace with a
  // counterparty, reading each row in the time range (episodes_by_kind, by kind and time,
  // was dropped by migration 8). It runs only on a learning pass's whole read.
  Stmt s = s_.conn.Prepare(
      "SELECT id, kind, occurred_at, entity_id, thread FROM episodes WHERE workspace_id = ?"
      " AND kind IN ('message_received', 'message_sent') AND occurred_at >= ?"
      " AND entity_id IS NOT NULL");
  s.Bind(1, ws).Bind(2, since);
  return AllRows(s, [](const Stmt& s) {
    return MessageFact{s.Text(0), s.Text(1) == "message_sent", s.Time(2), s.Text(3), s.Text(4)};
  });
}

Result<std::vector<std::pair<TimePoint, TimePoint>>> EpisodesReader::BlocksSince(
    const std::string& ws, TimePoint since) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  // A range of episodes_blocks (migration 8), less the retracted blocks.
  static const std::string sql =
      Concat({"SELECT occurred_at, ends_at FROM episodes", triage_sql::kBlocksBegunIn,
              " AND ends_at IS NOT NULL ORDER BY occurred_at"});
  Stmt s = s_.conn.Prepare(sql);
  s.Bind(1, ws).Bind(2, since).Bind(3, std::numeric_limits<int64_t>::max());
  return AllRows(s, [](const Stmt& s) { return std::make_pair(s.Time(0), s.Time(1)); });
}

Result<EpisodesReader::AfterVersion> EpisodesReader::EpisodesAfterVersion(
    const std::string& ws, const std::string& after) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  // A range of episodes_by_version.
  Stmt s = s_.conn.Prepare(
      "SELECT id, kind, occurred_at, entity_id, thread, world_version FROM episodes"
      " WHERE workspace_id = ? AND world_version > ?");
  s.Bind(1, ws).Bind(2, after);
  AfterVersion out;
  Status st;
  while (s.Step(&st)) {
    ++out.episodes;
    std::string wv = s.Text(5);
    if (wv > out.world_version) out.world_version = std::move(wv);
    std::string kind = s.Text(1);
    if ((kind != "message_received" && kind != "message_sent") || s.IsNull(3)) continue;
    out.messages.push_back(
        MessageFact{s.Text(0), kind == "message_sent", s.Time(2), s.Text(3), s.Text(4)});
  }
  if (!st.ok()) return st;
  return out;
}

Result<std::string> EpisodesReader::LatestWorldVersion(const std::string& ws) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT world_version FROM episodes WHERE workspace_id = ?"
      " ORDER BY world_version DESC LIMIT 1");
  s.Bind(1, ws);
  std::string out;
  Status st;
  if (s.Step(&st)) out = s.Text(0);
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<std::pair<std::string, TriageClass>>> EpisodesReader::NotifiedClasses(
    const std::string& ws, TimePoint since) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  // One range of notifications_by_class per class: a notification surfaces at or after its
  // message (handle_silently never surfaces: all of those are read).
  std::vector<std::pair<std::string, TriageClass>> out;
  for (TriageClass cls : AllOf<TriageClass>()) {
    bool silent = cls == TriageClass::kHandleSilently;
    Stmt s = s_.conn.Prepare(silent ? "SELECT episode_id FROM notifications WHERE workspace_id = ?"
                                      " AND triage_class = ? AND surface_at IS NULL"
                                    : "SELECT episode_id FROM notifications WHERE workspace_id = ?"
                                      " AND triage_class = ? AND surface_at >= ?");
    s.Bind(1, ws).Bind(2, cls);
    if (!silent) s.Bind(3, since);
    Status st;
    while (s.Step(&st)) out.emplace_back(s.Text(0), cls);
    if (!st.ok()) return st;
  }
  return out;
}

}  // namespace cortex
