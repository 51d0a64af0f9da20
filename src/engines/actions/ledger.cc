#include "engines/actions/ledger.h"

#include "core/crypto.h"
#include "core/ids.h"
#include "core/json_text.h"
#include "core/time.h"
#include "store/ledger.h"

namespace cortex {

namespace {

constexpr char kGenesis[] = "0000000000000000000000000000000000000000000000000000000000000000";
constexpr int kVerifyPage = 1000;

// SHA-256 over prev_hash and the entry's canonical text: the JSON object of its fields as
// nlohmann::json writes it (keys sorted, compact), which earlier builds hashed through a
// nlohmann tree. It is written here member by member, keys in that order, with provenance
// and detail given as their text (DumpJson's bytes are nlohmann's), so that an append
// neither copies those trees nor serializes them twice.
std::string HashOf(const LedgerEntry& e, const std::string& provenance_json,
                   const std::string& detail_json) {
  std::string text = e.prev_hash;
  text += "\n{\"action_id\":";
  text += DumpJson(e.action_id);
  text += ",\"decision_id\":";
  text += DumpJson(e.decision_id);
  text += ",\"detail\":";
  text += detail_json;
  text += ",\"event\":";
  text += DumpJson(nlohmann::json(Name(e.event)));
  text += ",\"id\":";
  text += DumpJson(e.id);
  text += ",\"occurred_at\":";
  text += std::to_string(ToUnixMillis(e.occurred_at));
  text += ",\"provenance\":";
  text += provenance_json;
  text += ",\"seq\":";
  text += std::to_string(e.seq);
  text += ",\"workspace_id\":";
  text += DumpJson(e.workspace_id);
  text += '}';
  return Sha256Hex(text);
}

}  // namespace

std::string LedgerHash(const LedgerEntry& e) {
  return HashOf(e, DumpJson(e.provenance), DumpJson(e.detail));
}

Result<std::string> AppendLedgerEntry(WriteTx& tx, const Clock& clock, const std::string& ws,
                                      const std::string& action_id, const std::string& decision_id,
                                      LedgerEvent event, const nlohmann::json& provenance,
                                      const nlohmann::json& detail, std::string id) {
  // The workspace's anchor holds the last entry's seq and hash: no need to load it.
  auto anchor = tx.ledger().Anchor(ws);
  if (!anchor.ok()) return anchor.status();
  auto [last_seq, last_hash] = *std::move(anchor);
  LedgerEntry e;
  e.id = id.empty() ? NewId("led_", clock) : std::move(id);
  e.workspace_id = ws;
  e.seq = last_seq + 1;
  e.action_id = action_id;
  e.decision_id = decision_id;
  e.event = event;
  e.occurred_at = clock.Now();
  e.prev_hash = last_seq > 0 ? last_hash : kGenesis;
  std::string provenance_json = DumpJson(provenance), detail_json = DumpJson(detail);
  e.hash = HashOf(e, provenance_json, detail_json);
  CORTEX_RETURN_IF_ERROR(tx.ledger().Append(e, provenance_json, detail_json));
  return e.id;
}

Result<LedgerCheck> VerifyLedger(Store& store, const std::string& ws) {
  LedgerCheck check;
  std::string prev = kGenesis;
  int64_t expected_seq = 1;
  Status st = store.Read([&](ReadTx& tx) -> Status {
    int64_t after = 0;
    while (check.ok) {
      auto page = tx.ledger().List(ws, after, kVerifyPage);
      if (!page.ok()) return page.status();
      if (page->empty()) break;
      for (const LedgerEntry& e : *page) {
        auto fail = [&](const std::string& why) {
          check.ok = false;
          check.problem = "entry seq " + std::to_string(e.seq) + " (" + e.id + "): " + why;
        };
        if (e.seq != expected_seq) {
          fail("expected seq " + std::to_string(expected_seq) +
               ": an entry before it was deleted or the chain reordered");
        } else if (e.prev_hash != prev) {
          fail(
              "its prev_hash does not match the entry before it: an entry was deleted, "
              "inserted or reordered");
        } else if (!e.provenance.is_object() || !e.detail.is_object() || LedgerHash(e) != e.hash) {
          fail("its contents do not match its hash: the entry was edited");
        }
        if (!check.ok) break;
        ++check.entries;
        prev = e.hash;
        ++expected_seq;
        after = e.seq;
      }
    }
    if (!check.ok) return Status::Ok();
    // The anchor catches what the chain alone cannot: entries cut off its end.
    auto anchor = tx.ledger().Anchor(ws);
    if (!anchor.ok()) return anchor.status();
    if (anchor->first != check.entries || (check.entries > 0 && anchor->second != prev)) {
      check.ok = false;
      check.problem = "the chain ends at seq " + std::to_string(check.entries) +
                      " but the workspace's anchor records seq " + std::to_string(anchor->first) +
                      ": entries were deleted from its end";
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return check;
}

}  // namespace cortex
