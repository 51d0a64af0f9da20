// cortex-store-floor: what SQLite alone charges for storing one triaged episode (its
// episode, decision and notification rows), with none of Cortex's own work: no HTTP, no
// parsing, no triage look-ups, no ledger. Prepared statements, bound values, one transaction
// per batch, the writer's own settings (WAL, synchronous=NORMAL, 16 MiB cache, foreign keys).
// It bounds what any ingest built on this store can reach on this machine, in four layouts:
//
//   schema       today's tables and indexes (every migration applied), rows in the order
//                Cortex stores them (episodes as they arrive, decisions by counterparty,
//                notifications by class and time)
//   tables only  the same three tables, secondary indexes dropped (each table and its id)
//   one row      the three rows as one, keyed by an integer, with the four indexes triage
//                and the digest read (counterparty and kind, thread, external id, class)
//   one row, no index  the same row and nothing else: the least any layout writes
//
//   build/cortex-store-floor [--base N] [--batch N] [--rounds N] [DIR]
//
// Each layout gets a fresh store in DIR (default /tmp), filled with --base episodes
// (default 10,000) before timing; then --rounds batches (default 5) of --batch episodes
// (default 10,000) are timed, commit included, and the median is printed in µs per episode
// with the episodes/s it allows. The stores are deleted afterwards.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "store/migrations.h"

namespace {

constexpr int kCounterparties = 1000;
constexpr int kThreads = 5000;
constexpr int64_t kDayMs = 86'400'000;

void Die(sqlite3* db, const std::string& what) {
  std::fprintf(stderr, "cortex-store-floor: %s: %s\n", what.c_str(),
               db != nullptr ? sqlite3_errmsg(db) : "");
  std::exit(1);
}

void Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::fprintf(stderr, "cortex-store-floor: %s\n  in: %.200s\n", err, sql.c_str());
    std::exit(1);
  }
}

// An id like Cortex's: a prefix, then 26 characters that grow with every id.
std::string Id(const char* prefix, int64_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s01M8%022lld", prefix, static_cast<long long>(n));
  return buf;
}

// One ingested message, with what triage decided about it: the values the three rows hold,
// sized like bench/gen_world.py's world (subject ~20, summary ~50, decision details ~250).
struct Triaged {
  int64_t n;
  int counterparty;
  int thread;
  int64_t occurred_at;
  int triage_class;  // into kClasses
  int64_t surface_at;
};

// Triage's classes, as often as the generated world has them.
const std::string kClasses[] = {"daily_digest",  "daily_digest",          "daily_digest",
                                "interrupt_now", "surface_at_transition", "handle_silently"};
const std::string kWs = Id("ws_", 0);
const std::string kSubject = "Hiring loop feedback";
const std::string kSummary = "Notes from the panel, and a question about the offer date.";
const std::string kDetails =
    R"({"episode_id":"ep_01M8SSAWD3A7QATC3MXX1ZSJMW","signals":[{"kind":"first_contact",)"
    R"("summary":"First message from p490@org10.example."},{"kind":"after_hours","summary":)"
    R"("Arrived Sun 02:11, outside working hours (09:00-18:00, Mon-Fri)."}],"surface_at":)"
    R"("2026-08-23T17:00:00Z","triage_class":"daily_digest"})";
const std::string kPayload =
    "Triage p490@org10.example's email 'Hiring loop feedback': put in the digest of "
    "2026-08-23T17:00:00Z.";
const std::string kRuleSummary =
    "No rule matched; default policy: everything else waits for the daily digest.";

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

  // Bound without a copy, as Cortex binds: a value must outlive the statement's Run(), so
  // each row is bound and run in one expression.
  Stmt& Text(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    return *this;
  }
  Stmt& Int(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& Null(int i) {
    sqlite3_bind_null(s_, i);
    return *this;
  }
  void Run() {
    if (sqlite3_step(s_) != SQLITE_DONE) Die(db_, "step");
    sqlite3_reset(s_);
  }

 private:
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
      while (sqlite3_step(s) == SQLITE_ROW) {
        names.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
      }
      sqlite3_finalize(s);
      for (const std::string& n : names) Exec(db, "DROP INDEX " + n);
    }
    Exec(db,
         "INSERT INTO workspaces (id, name, world_version, agent_version, created_at)"
         " VALUES ('" +
             kWs + "', 'floor', 'wv', 'av', 0)");
    Stmt entity(db,
                "INSERT INTO entities (id, workspace_id, kind, name, created_at)"
                " VALUES (?, ?, 'person', 'someone', 0)");
    for (int i = 0; i < kCounterparties; ++i) entity.Text(1, Id("entity_", i)).Text(2, kWs).Run();
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
    std::string av = Id("av_", 0), wv = Id("wv_", 0);
    for (const Triaged& t : batch) {
      episode.Text(1, Id("ep_", t.n))
          .Text(2, kWs)
          .Int(3, t.occurred_at)
          .Text(4, Id("entity_", t.counterparty))
          .Text(5, kSubject)
          .Text(6, kSummary)
          .Text(7, "thr-" + std::to_string(t.thread))
          .Text(8, "gw-" + std::to_string(t.n))
          .Text(9, wv)
          .Int(10, t.occurred_at)
          .Run();
    }
    // Decisions in counterparty order, notifications in class and time order (triage.cc).
    std::vector<const Triaged*> order;
    for (const Triaged& t : batch) order.push_back(&t);
    std::stable_sort(order.begin(), order.end(), [](const Triaged* a, const Triaged* b) {
      return a->counterparty < b->counterparty;
    });
    for (const Triaged* t : order) {
      decision.Text(1, Id("dec_", t->n))
          .Text(2, kWs)
          .Int(3, t->occurred_at)
          .Text(4, Id("entity_", t->counterparty))
          .Text(5, kPayload)
          .Text(6, kRuleSummary)
          .Text(7, Id("trc_", t->n))
          .Text(8, av)
          .Text(9, wv)
          .Text(10, "[\"" + Id("ep_", t->n) + "\"]")
          .Text(11, kDetails)
          .Text(12, Id("ntf_", t->n))
          .Run();
    }
    std::stable_sort(order.begin(), order.end(), [](const Triaged* a, const Triaged* b) {
      return std::tie(kClasses[a->triage_class], a->surface_at) <
             std::tie(kClasses[b->triage_class], b->surface_at);
    });
    for (const Triaged* t : order) {
      notification.Text(1, Id("ntf_", t->n))
          .Text(2, kWs)
          .Text(3, Id("ep_", t->n))
          .Text(4, Id("dec_", t->n))
          .Text(5, Id("entity_", t->counterparty))
          .Text(6, kClasses[t->triage_class])
          .Int(7, t->surface_at)
          .Int(8, t->occurred_at)
          .Run();
    }
  }

 private:
  bool indexes_;
};

// The three rows as one, keyed by an integer. With `int_keys`, the workspace, the
// counterparty, the thread and the class are integers too (numbered elsewhere), so each
// index key is a few bytes rather than ~30 characters a column.
class OneRowLayout : public Layout {
 public:
  enum Keys { kNoIndex, kTextKeys, kIntegerKeys };
  explicit OneRowLayout(Keys keys) : keys_(keys) {}
  const char* Name() const override {
    return keys_ == kNoIndex    ? "one row, no index"
           : keys_ == kTextKeys ? "one row"
                                : "one row, int keys";
  }

  void Create(sqlite3* db) override {
    const char* key = keys_ == kIntegerKeys ? "INTEGER" : "TEXT";
    Exec(db, std::string("CREATE TABLE triaged (n INTEGER PRIMARY KEY, workspace_id ") + key +
                 " NOT NULL, kind TEXT NOT NULL, occurred_at INTEGER NOT NULL, entity_id " + key +
                 ", channel TEXT NOT NULL, subject TEXT NOT NULL, summary TEXT NOT NULL, body TEXT "
                 "NOT NULL, thread " +
                 key +
                 " NOT NULL, external_id TEXT, class TEXT NOT NULL, payload_summary TEXT NOT "
                 "NULL, rule_summary TEXT, confidence TEXT NOT NULL, details TEXT NOT NULL, "
                 "triage_class " +
                 key + " NOT NULL, surface_at INTEGER)");
    if (keys_ != kNoIndex) {
      Exec(db,
           "CREATE INDEX triaged_by_entity_kind ON triaged(workspace_id, entity_id, kind, "
           "occurred_at);"
           "CREATE INDEX triaged_by_thread ON triaged(workspace_id, thread, occurred_at);"
           "CREATE UNIQUE INDEX triaged_by_external_id ON triaged(workspace_id, external_id);"
           "CREATE INDEX triaged_by_class ON triaged(workspace_id, triage_class, surface_at);");
    }
  }

  void Store(sqlite3* db, const std::vector<Triaged>& batch) override {
    Stmt row(db,
             "INSERT INTO triaged (n, workspace_id, kind, occurred_at, entity_id, channel, "
             "subject, summary, body, thread, external_id, class, payload_summary, rule_summary, "
             "confidence, details, triage_class, surface_at) VALUES (?, ?, 'message_received', "
             "?, ?, 'email', ?, ?, '', ?, ?, 'triage', ?, ?, 'just_guessing', ?, ?, ?)");
    const bool ints = keys_ == kIntegerKeys;
    for (const Triaged& t : batch) {
      row.Int(1, t.n).Int(3, t.occurred_at).Text(5, kSubject).Text(6, kSummary);
      row.Text(9, kPayload).Text(10, kRuleSummary).Text(11, kDetails).Int(13, t.surface_at);
      if (ints) {
        row.Int(2, 1)
            .Int(4, t.counterparty)
            .Int(7, t.thread)
            .Text(8, "gw-" + std::to_string(t.n))
            .Int(12, t.triage_class)
            .Run();
      } else {
        row.Text(2, kWs)
            .Text(4, Id("entity_", t.counterparty))
            .Text(7, "thr-" + std::to_string(t.thread))
            .Text(8, "gw-" + std::to_string(t.n))
            .Text(12, kClasses[t.triage_class])
            .Run();
      }
    }
  }

 private:
  Keys keys_;
};

std::vector<Triaged> Batch(std::mt19937_64& rng, int64_t& next, int size) {
  std::vector<Triaged> out(static_cast<size_t>(size));
  for (Triaged& t : out) {
    t.n = ++next;
    t.counterparty = static_cast<int>(rng() % kCounterparties);
    t.thread = static_cast<int>(rng() % kThreads);
    t.occurred_at = 1'780'000'000'000 + t.n * 60'000;
    t.triage_class = static_cast<int>(rng() % 6);
    t.surface_at = t.occurred_at - t.occurred_at % kDayMs + kDayMs;
  }
  return out;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Median µs per episode over `rounds` batches, after `base` episodes stored untimed.
double Measure(Layout& layout, const std::string& dir, int base, int batch, int rounds) {
  std::string path = dir + "/cortex-store-floor-" + std::to_string(getpid()) + ".db";
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) Die(db, "open " + path);
  Exec(db,
       "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"
       " PRAGMA cache_size=-16384;");
  layout.Create(db);
  std::mt19937_64 rng(42);
  int64_t next = 0;
  for (int done = 0; done < base; done += batch) {
    Exec(db, "BEGIN");
    layout.Store(db, Batch(rng, next, std::min(batch, base - done)));
    Exec(db, "COMMIT");
  }
  Exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
  std::vector<double> us;
  for (int r = 0; r < rounds; ++r) {
    std::vector<Triaged> b = Batch(rng, next, batch);
    auto start = std::chrono::steady_clock::now();
    Exec(db, "BEGIN");
    layout.Store(db, b);
    Exec(db, "COMMIT");
    us.push_back(Seconds(start) * 1e6 / batch);
  }
  sqlite3_close(db);
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  std::nth_element(us.begin(), us.begin() + static_cast<std::ptrdiff_t>(us.size() / 2), us.end());
  return us[us.size() / 2];
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
  int base = 10'000, batch = 10'000, rounds = 5;
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
  SchemaLayout schema(true), tables(false);
  OneRowLayout one(OneRowLayout::kTextKeys), ints(OneRowLayout::kIntegerKeys),
      bare(OneRowLayout::kNoIndex);
  std::printf(
      "storing a triaged episode, SQLite alone (%d stored first, batches of %d, median "
      "of %d):\n",
      base, batch, rounds);
  for (Layout* l : std::initializer_list<Layout*>{&schema, &tables, &one, &ints, &bare}) {
    double us = Measure(*l, dir, base, batch, rounds);
    std::printf("  %-18s %6.1f µs an episode, at most %7.0f episodes/s\n", l->Name(), us, 1e6 / us);
  }
  return 0;
}
