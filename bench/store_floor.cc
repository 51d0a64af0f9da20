// cortex-store-floor: what SQLite alone charges the writer for storing one triaged episode
// (its episode, decision and notification rows), with none of Cortex's own work: no HTTP,
// no parsing, no triage look-ups, no ledger. Prepared statements, bound values, one
// transaction per batch, opened as Cortex's writer is (its VFS, WAL, synchronous=NORMAL,
// 16 MiB cache, foreign keys, no memory statistics) and, like it, with checkpoints off the
// writer's clock: they run between rounds, timed on a line of their own.
// Five layouts:
//
//   schema             today's tables and indexes (every migration applied); episodes as
//                      they arrive, then decisions by counterparty and notifications by
//                      class and time, as triage stores them (it sorts up to 4,000 at a
//                      time, this the whole batch)
//   tables only        the same three tables, their secondary indexes dropped
//   one row            the three rows as one, keyed by an integer, with the four indexes
//                      triage and the digest read (counterparty and kind, thread, external
//                      id, class and time)
//   one row, int keys  the same with the workspace, counterparty, kind, thread and class as
//                      integers (numbered elsewhere)
//   one row, no index  the same row and nothing else: the least any layout writes
//
//   build/cortex-store-floor [--base N] [--batch N] [--rounds N] [DIR]
//
// Each layout gets a fresh store in DIR (default /tmp; at --base 1000000 it needs ~3 GB),
// filled with --base episodes (default 10,000) untimed; then --rounds batches (default 5) of
// --batch episodes (default 10,000) are timed, commit included, and the median is printed in
// µs per episode with the episodes/s it allows. The episodes are like bench/gen_world.py's
// and the load generator's: 1,000 counterparties, 1,000 threads, times at random over 90
// days. Every value is made before the clock starts. The stores are deleted afterwards.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "store/migrations.h"
#include "store/sqlite_vfs.h"

namespace {

constexpr int kCounterparties = 1000;
constexpr int kThreads = 1000;
constexpr int64_t kStartMs = 1'780'000'000'000;  // 2026-05-28
constexpr int64_t kDayMs = 86'400'000;
constexpr int64_t kSpanMs = 90 * kDayMs;

// Triage's classes, as often as the generated world has them, and when each surfaces.
constexpr std::string_view kClasses[] = {"daily_digest",          "daily_digest",
                                         "daily_digest",          "interrupt_now",
                                         "surface_at_transition", "handle_silently"};
constexpr std::string_view kWs = "ws_01M8SSAVPT30EVD3HBW8FX3HHW";
constexpr std::string_view kAgentVersion = "av_01M8SSAVPX95HDSD9E818F88M7";
constexpr std::string_view kWorldVersion = "wv_01M8SSAWD2D7YD6GG6EF6B59X3";
constexpr std::string_view kSubject = "Hiring loop feedback";
constexpr std::string_view kSummary = "Notes from the panel, and a question about the offer date.";
constexpr std::string_view kDetails =
    R"({"episode_id":"ep_01M8SSAWD3A7QATC3MXX1ZSJMW","signals":[{"kind":"first_contact",)"
    R"("summary":"First message from p490@org10.example."},{"kind":"after_hours","summary":)"
    R"("Arrived Sun 02:11, outside working hours (09:00-18:00, Mon-Fri)."}],"surface_at":)"
    R"("2026-08-23T17:00:00Z","triage_class":"daily_digest"})";
constexpr std::string_view kPayload =
    "Triage p490@org10.example's email 'Hiring loop feedback': put in the digest of "
    "2026-08-23T17:00:00Z.";
constexpr std::string_view kRuleSummary =
    "No rule matched; default policy: everything else waits for the daily digest.";

std::string path_to_remove;  // the store in use, removed on any exit

void RemoveStore() {
  if (path_to_remove.empty()) return;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_to_remove + suffix).c_str());
}

[[noreturn]] void Die(sqlite3* db, const std::string& what) {
  std::fprintf(stderr, "cortex-store-floor: %s: %s\n", what.c_str(),
               db != nullptr ? sqlite3_errmsg(db) : "");
  std::exit(1);
}

void Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::fprintf(stderr, "cortex-store-floor: %s\n  in: %.200s\n",
                 err != nullptr ? err : sqlite3_errstr(rc), sql.c_str());
    std::exit(1);
  }
}

// An id like Cortex's: a prefix, then 26 characters that grow with every id.
std::string Id(const char* prefix, int64_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s01M8%022lld", prefix, static_cast<long long>(n));
  return buf;
}

// One ingested message and what triage decided about it: every value the rows hold, made
// before timing. Sized like bench/gen_world.py's world (decision details ~250 bytes).
struct Triaged {
  int64_t n;
  int counterparty;
  int thread;
  int cls;  // into kClasses
  int64_t occurred_at;
  std::optional<int64_t> surface_at;
  std::string episode_id, decision_id, notification_id, trace_id, entity_id, thread_name,
      external_id, sources;
};

std::vector<Triaged> Batch(std::mt19937_64& rng, int64_t& next, int size) {
  std::vector<Triaged> out(static_cast<size_t>(size));
  for (Triaged& t : out) {
    t.n = ++next;
    t.counterparty = static_cast<int>(rng() % kCounterparties);
    t.thread = static_cast<int>(rng() % kThreads);
    t.cls = static_cast<int>(rng() % std::size(kClasses));
    t.occurred_at = kStartMs + static_cast<int64_t>(rng() % kSpanMs);
    std::string_view cls = kClasses[t.cls];
    if (cls == "daily_digest") {
      t.surface_at = t.occurred_at - t.occurred_at % kDayMs + kDayMs + 17 * 3'600'000;
    } else if (cls == "interrupt_now") {
      t.surface_at = t.occurred_at;
    } else if (cls == "surface_at_transition") {
      t.surface_at = t.occurred_at + 3'600'000;
    }
    t.episode_id = Id("ep_", t.n);
    t.decision_id = Id("dec_", t.n);
    t.notification_id = Id("ntf_", t.n);
    t.trace_id = Id("trc_", t.n);
    t.entity_id = Id("entity_", t.counterparty);
    t.thread_name = "thr-" + std::to_string(t.thread);
    t.external_id = "gw-" + std::to_string(t.n);
    t.sources = "[\"" + t.episode_id + "\"]";
  }
  return out;
}

// A prepared statement. Values are bound without a copy, as Cortex binds them: they must
// outlive Run(), which every value here does (constants, or a Triaged of the batch).
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s_, nullptr) !=
        SQLITE_OK) {
      Die(db, "prepare " + sql.substr(0, 60));
    }
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Text(int i, std::string_view v) {
    return Check(sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC));
  }
  Stmt& Int(int i, int64_t v) { return Check(sqlite3_bind_int64(s_, i, v)); }
  Stmt& OptInt(int i, std::optional<int64_t> v) {
    return v ? Int(i, *v) : Check(sqlite3_bind_null(s_, i));
  }
  void Run() {
    if (sqlite3_step(s_) != SQLITE_DONE) Die(db_, "step");
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

 private:
  Stmt& Check(int rc) {
    if (rc != SQLITE_OK) Die(db_, "bind");
    return *this;
  }

  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

// A layout: how to create it, and how to store a batch of triaged episodes.
class Layout {
 public:
  virtual ~Layout() = default;
  virtual const char* Name() const = 0;
  virtual void Create(sqlite3* db) = 0;
  virtual void Store(sqlite3* db, const std::vector<Triaged>& batch) = 0;
};

// Today's schema, every migration applied; with `indexes` false, each secondary index of
// the three tables is dropped.
class SchemaLayout : public Layout {
 public:
  explicit SchemaLayout(bool indexes) : indexes_(indexes) {}
  const char* Name() const override { return indexes_ ? "schema" : "tables only"; }

  void Create(sqlite3* db) override {
    for (const cortex::Migration& m : cortex::Migrations()) Exec(db, m.sql);
    if (!indexes_) {
      std::vector<std::string> names;
      sqlite3_stmt* s = nullptr;
      if (sqlite3_prepare_v2(db,
                             "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT"
                             " NULL AND tbl_name IN ('episodes', 'decisions', 'notifications')",
                             -1, &s, nullptr) != SQLITE_OK) {
        Die(db, "listing the indexes");
      }
      int rc;
      while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        names.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
      }
      sqlite3_finalize(s);
      if (rc != SQLITE_DONE) Die(db, "listing the indexes");
      for (const std::string& n : names) Exec(db, "DROP INDEX " + n);
    }
    Exec(db, "BEGIN");
    Exec(db,
         "INSERT INTO workspaces (id, name, world_version, agent_version, created_at)"
         " VALUES ('" +
             std::string(kWs) + "', 'floor', 'wv', 'av', 0)");
    Stmt entity(db,
                "INSERT INTO entities (id, workspace_id, kind, name, created_at)"
                " VALUES (?, ?, 'person', 'someone', 0)");
    for (int i = 0; i < kCounterparties; ++i) {
      std::string id = Id("entity_", i);
      entity.Text(1, id).Text(2, kWs).Run();
    }
    Exec(db, "COMMIT");
  }

  void Store(sqlite3* db, const std::vector<Triaged>& batch) override {
    Stmt episode(db,
                 "INSERT INTO episodes (id, workspace_id, kind, occurred_at, ends_at, entity_id,"
                 " channel, subject, summary, body, thread, external_id, world_version,"
                 " created_at) VALUES (?, ?, 'message_received', ?, NULL, ?, 'email', ?, ?, '',"
                 " ?, ?, ?, ?)");
    Stmt decision(db,
                  "INSERT INTO decisions (id, workspace_id, class, status, occurred_at,"
                  " entity_id, payload_summary, rule_id, rule_summary, confidence, trace_id,"
                  " agent_version, world_version, source_episode_ids, details,"
                  " notification_id, triage_decision_id, ledger_entry_id) VALUES (?, ?,"
                  " 'triage', 'recorded', ?, ?, ?, NULL, ?, 'just_guessing', ?, ?, ?, ?, ?, ?,"
                  " NULL, NULL)");
    Stmt notification(db,
                      "INSERT INTO notifications (id, workspace_id, episode_id, decision_id,"
                      " entity_id, triage_class, surface_at, created_at)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    for (const Triaged& t : batch) {
      episode.Text(1, t.episode_id).Text(2, kWs).Int(3, t.occurred_at).Text(4, t.entity_id);
      episode.Text(5, kSubject).Text(6, kSummary).Text(7, t.thread_name).Text(8, t.external_id);
      episode.Text(9, kWorldVersion).Int(10, t.occurred_at).Run();
    }
    std::vector<const Triaged*> order;
    for (const Triaged& t : batch) order.push_back(&t);
    std::stable_sort(order.begin(), order.end(), [](const Triaged* a, const Triaged* b) {
      return a->counterparty < b->counterparty;
    });
    for (const Triaged* t : order) {
      decision.Text(1, t->decision_id).Text(2, kWs).Int(3, t->occurred_at);
      decision.Text(4, t->entity_id).Text(5, kPayload).Text(6, kRuleSummary);
      decision.Text(7, t->trace_id).Text(8, kAgentVersion).Text(9, kWorldVersion);
      decision.Text(10, t->sources).Text(11, kDetails).Text(12, t->notification_id).Run();
    }
    std::stable_sort(order.begin(), order.end(), [](const Triaged* a, const Triaged* b) {
      return std::tie(kClasses[a->cls], a->surface_at) < std::tie(kClasses[b->cls], b->surface_at);
    });
    for (const Triaged* t : order) {
      notification.Text(1, t->notification_id).Text(2, kWs).Text(3, t->episode_id);
      notification.Text(4, t->decision_id).Text(5, t->entity_id).Text(6, kClasses[t->cls]);
      notification.OptInt(7, t->surface_at).Int(8, t->occurred_at).Run();
    }
  }

 private:
  bool indexes_;
};

// The three rows as one, keyed by an integer.
class OneRowLayout : public Layout {
 public:
  enum Keys { kNoIndex, kTextKeys, kIntegerKeys };
  explicit OneRowLayout(Keys keys) : keys_(keys) {}
  const char* Name() const override {
    switch (keys_) {
      case kNoIndex:
        return "one row, no index";
      case kTextKeys:
        return "one row";
      case kIntegerKeys:
        return "one row, int keys";
    }
    return "";
  }

  void Create(sqlite3* db) override {
    std::string sql = R"sql(
CREATE TABLE triaged (
  n INTEGER PRIMARY KEY, workspace_id $KEY NOT NULL, kind $KEY NOT NULL,
  occurred_at INTEGER NOT NULL, entity_id $KEY, channel TEXT NOT NULL, subject TEXT NOT NULL,
  summary TEXT NOT NULL, body TEXT NOT NULL, thread $KEY NOT NULL, external_id TEXT,
  class TEXT NOT NULL, payload_summary TEXT NOT NULL, rule_summary TEXT,
  confidence TEXT NOT NULL, details TEXT NOT NULL, triage_class $KEY NOT NULL,
  surface_at INTEGER);
)sql";
    if (keys_ != kNoIndex) {
      sql += R"sql(
CREATE INDEX triaged_by_entity_kind ON triaged(workspace_id, entity_id, kind, occurred_at);
CREATE INDEX triaged_by_thread ON triaged(workspace_id, thread, occurred_at);
CREATE UNIQUE INDEX triaged_by_external_id ON triaged(workspace_id, external_id);
CREATE INDEX triaged_by_class ON triaged(workspace_id, triage_class, surface_at);
)sql";
    }
    const std::string key = keys_ == kIntegerKeys ? "INTEGER" : "TEXT";
    for (size_t at; (at = sql.find("$KEY")) != std::string::npos;) sql.replace(at, 4, key);
    Exec(db, sql);
  }

  void Store(sqlite3* db, const std::vector<Triaged>& batch) override {
    Stmt row(db,
             "INSERT INTO triaged (n, workspace_id, kind, occurred_at, entity_id, channel, "
             "subject, summary, body, thread, external_id, class, payload_summary, rule_summary, "
             "confidence, details, triage_class, surface_at) VALUES (?, ?, ?, ?, ?, 'email', ?, "
             "?, '', ?, ?, 'triage', ?, ?, 'just_guessing', ?, ?, ?)");
    const bool ints = keys_ == kIntegerKeys;
    for (const Triaged& t : batch) {
      row.Int(1, t.n).Int(4, t.occurred_at).Text(6, kSubject).Text(7, kSummary);
      row.Text(9, t.external_id).Text(10, kPayload).Text(11, kRuleSummary).Text(12, kDetails);
      row.OptInt(14, t.surface_at);
      if (ints) {
        row.Int(2, 1).Int(3, 1).Int(5, t.counterparty).Int(8, t.thread).Int(13, t.cls);
      } else {
        row.Text(2, kWs).Text(3, "message_received").Text(5, t.entity_id);
        row.Text(8, t.thread_name).Text(13, kClasses[t.cls]);
      }
      row.Run();
    }
  }

 private:
  Keys keys_;
};

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Figures {
  double us_per_episode;  // the writer's time, commit included
  double checkpoint_us;   // copying a batch's pages into the database, per episode
};

// Medians over `rounds` batches, after `base` episodes stored untimed.
Figures Measure(Layout& layout, const std::string& dir, int base, int batch, int rounds) {
  path_to_remove = dir + "/cortex-store-floor-" + std::to_string(getpid()) + ".db";
  RemoveStore();
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path_to_remove.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      cortex::CoalescingWalVfs()) != SQLITE_OK) {
    Die(db, "open " + path_to_remove);
  }
  cortex::DropUncommittedFramesOnRollback(db);
  Exec(db,
       "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"
       " PRAGMA cache_size=-16384;");
  sqlite3_wal_autocheckpoint(db, 0);  // Cortex checkpoints on a thread of its own
  layout.Create(db);
  std::mt19937_64 rng(42);
  int64_t next = 0;
  for (int done = 0; done < base; done += batch) {
    Exec(db, "BEGIN");
    layout.Store(db, Batch(rng, next, std::min(batch, base - done)));
    Exec(db, "COMMIT");
    Exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
  }
  std::vector<double> us, checkpoint_us;
  for (int r = 0; r < rounds; ++r) {
    std::vector<Triaged> b = Batch(rng, next, batch);
    auto start = std::chrono::steady_clock::now();
    Exec(db, "BEGIN");
    layout.Store(db, b);
    Exec(db, "COMMIT");
    us.push_back(Seconds(start) * 1e6 / batch);
    start = std::chrono::steady_clock::now();
    Exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    checkpoint_us.push_back(Seconds(start) * 1e6 / batch);
  }
  sqlite3_close(db);
  RemoveStore();
  return {Median(us), Median(checkpoint_us)};
}

int ParseCount(const char* flag, const char* value) {
  char* end = nullptr;
  long v = value != nullptr ? std::strtol(value, &end, 10) : 0;
  if (value == nullptr || *end != '\0' || v < 1 || v > 10'000'000) {
    std::fprintf(stderr, "cortex-store-floor: %s needs a count from 1 to 10,000,000\n", flag);
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  int base = 10'000;
  int batch = 10'000;
  int rounds = 5;
  std::string dir = "/tmp";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--base") {
      base = ParseCount("--base", argv[++i]);
    } else if (a == "--batch") {
      batch = ParseCount("--batch", argv[++i]);
    } else if (a == "--rounds") {
      rounds = ParseCount("--rounds", argv[++i]);
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "usage: cortex-store-floor [--base N] [--batch N] [--rounds N] [DIR]\n");
      return 2;
    } else {
      dir = a;
    }
  }
  // As Cortex's store sets it, before SQLite initializes (sqlite_store.cc).
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  std::atexit(RemoveStore);
  SchemaLayout schema(true);
  SchemaLayout tables(false);
  OneRowLayout one(OneRowLayout::kTextKeys);
  OneRowLayout ints(OneRowLayout::kIntegerKeys);
  OneRowLayout bare(OneRowLayout::kNoIndex);
  std::printf(
      "storing a triaged episode, SQLite alone, on the writer (%d stored first, batches of "
      "%d, median of %d):\n",
      base, batch, rounds);
  for (Layout* l : std::initializer_list<Layout*>{&schema, &tables, &one, &ints, &bare}) {
    Figures f = Measure(*l, dir, base, batch, rounds);
    std::printf(
        "  %-18s %6.1f µs an episode, at most %7.0f episodes/s (checkpoint after: %.1f µs)\n",
        l->Name(), f.us_per_episode, 1e6 / f.us_per_episode, f.checkpoint_us);
    std::fflush(stdout);
  }
  return 0;
}
