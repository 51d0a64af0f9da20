// What the areas' SQL (store/<area>_sql.cc) shares inside one transaction: the connection,
// and what the transaction remembers between statements. Internal to the store: engines see
// store/tx.h and the area headers.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/model.h"
#include "store/sql.h"

namespace cortex {

// The calendar blocks of one workspace a transaction has read for ActiveBlockAt: every
// block begun in (from, to], by start (ties in the order stored). Answers as the database
// would, from memory (episodes_sql.cc says when).
struct HeldBlocks {
  static constexpr size_t kMaxHeld = 2048;

  bool asked = false;     // ActiveBlockAt has been called
  bool loaded = false;    // rows hold the span (from, to]
  bool too_many = false;  // the span held more than kMaxHeld: ask the database
  TimePoint from, to;
  std::vector<Episode> rows;

  void GiveUp();
  // Of the blocks begun in (earliest_start, t] that end after t, the latest-ending; of
  // those, the latest begun; of identical ones, the last stored.
  std::optional<Episode> At(TimePoint t, TimePoint earliest_start) const;
  // A block the transaction stored joins the rows if it began inside the span, as the
  // database holds it (times in whole milliseconds).
  void Hold(const Episode& e);
  // The first row begun after `t`.
  std::vector<Episode>::const_iterator After(TimePoint t) const;
};

struct TxState {
  explicit TxState(SqlConn& c) : conn(c) {}
  TxState(const TxState&) = delete;
  TxState& operator=(const TxState&) = delete;

  SqlConn& conn;

  // Entities and episodes this write inserted and not yet added to their workspace's row:
  // a batch of 10,000 lines updates it once, in FinishWrite().
  struct Uncounted {
    int64_t entities = 0;
    int64_t episodes = 0;
  };
  std::unordered_map<std::string, Uncounted> uncounted;

  // Calendar blocks read for EpisodesReader::ActiveBlockAt, by workspace.
  std::unordered_map<std::string, HeldBlocks> blocks;

  // Writes what the transaction held back. The store calls it after a write function
  // succeeded and before committing (or releasing its savepoint), and drops the state
  // unfinished when the function failed.
  Status FinishWrite();

  // `read()`'s row for `key`, from the connection's remembered rows when it keeps them
  // (SqlConn::Stable); a row read is remembered, a miss or an error is not.
  template <typename T, typename ReadRow>
  Result<T> Remembered(std::unordered_map<std::string, T> StableRows::*map, const std::string& key,
                       ReadRow read) {
    StableRows* stable = conn.Stable();
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
};

// Runs a statement that returns at most one row: `row(s)` on it, else NotFound(`missing`).
template <typename ReadRow>
auto OneRow(Stmt& s, const std::string& missing, ReadRow row) -> Result<decltype(row(s))> {
  Status st;
  if (!s.Step(&st)) return st.ok() ? Status::NotFound(missing) : st;
  return row(s);
}

// Runs a statement and collects `row(s)` for every row.
template <typename ReadRow>
auto AllRows(Stmt& s, ReadRow row) -> Result<std::vector<decltype(row(s))>> {
  std::vector<decltype(row(s))> out;
  Status st;
  while (s.Step(&st)) out.push_back(row(s));
  if (!st.ok()) return st;
  return out;
}

// The look-ups triage runs for every message, named so that the query-plan test checks
// the very statements that run (sqlite_store_test.cc): each must read an index alone.
namespace triage_sql {
extern const char* const kEarlierReceived;  // their messages up to a time
const std::string& EarlierOther();          // their episodes of other kinds up to a time
extern const char* const kLastSent;         // our last message to them
extern const char* const kUnanswered;       // their messages since then
extern const char* const kThreadCount;      // a thread's messages in a window
extern const char* const kActiveBlockEnd;   // the latest end of a block open at a time
const std::string& ActiveBlock();           // the block with that end
const std::string& BlocksBetween();         // the blocks begun in a span, by start
}  // namespace triage_sql

}  // namespace cortex
