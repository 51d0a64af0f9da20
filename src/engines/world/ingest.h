// Ingest: batches of entities and episodes into one workspace's world model. Two doors:
// JSONL text (cortex ingest, POST /v1/episodes) or parsed JSON lines (episode.ingest), in
// the format docs/ingest.md documents; and typed items (IngestItems), which the mail and
// calendar connectors build from what they parsed. A batch is all or nothing: every item is
// validated first, then the whole batch is written: in one transaction, or a large one in
// steps that other workspaces' writes go between (Store::WriteInSteps), undone if one fails.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "store/model.h"
#include "store/store.h"

namespace cortex {

// An entity line, typed: a person or organisation and the identifiers that reach them.
struct IncomingEntity {
  std::string name;
  std::string kind = "person";           // or "organization"
  std::vector<std::string> identifiers;  // in normal form (NormalizeIdentifier), at least one
  std::vector<std::string> tags;
};

// An episode line, typed. Of `episode`, the fields a line carries are read (kind,
// occurred_at, ends_at, channel, subject, summary, body, thread, external_id); ingest sets
// the rest. `counterparty` is an identifier in normal form or an entity id; "" for none
// (allowed for calendar blocks and meetings only).
struct IncomingEpisode {
  Episode episode;
  std::string counterparty;
};

using IngestItem = std::variant<IncomingEntity, IncomingEpisode>;

struct IngestReport {
  size_t lines = 0;  // non-blank lines read
  size_t episodes_added = 0;
  size_t entities_added = 0;    // explicit entity lines and new counterparties
  size_t entities_updated = 0;  // entity lines that added a name, identifier or tag
  size_t duplicates = 0;        // episodes whose external_id was already stored
  size_t triaged = 0;           // inbound messages triaged (one notification each)
  std::string world_version;    // after the batch (unchanged if the batch changed nothing)
};

// The report as POST /v1/episodes and episode.ingest answer it: {"status": `status`,
// "lines": ..., ..., "world_version": ...}.
nlohmann::json IngestReportJson(const IngestReport& report, std::string_view status);

// Ingests `jsonl` into workspace `ws_id`. On any bad line: InvalidArgument whose message
// starts "line N: " and names the field; nothing is written.
Result<IngestReport> IngestJsonl(Store& store, const Clock& clock, const std::string& ws_id,
                                 std::string_view jsonl);
// The same, running `also` in the batch's transaction after it (a connector's cursor): both
// commit or neither. An empty batch is allowed here.
Result<IngestReport> IngestJsonl(Store& store, const Clock& clock, const std::string& ws_id,
                                 std::string_view jsonl,
                                 const std::function<Status(WriteTx&)>& also);

// How a long caller (the MCP tool episode.ingest) follows and stops a batch.
struct IngestControl {
  // Told the lines applied so far and the batch's total: after a step of a large batch
  // commits (at most every kIngestProgressLines lines) and once when the batch has landed.
  // Called at the start of the next step, on the store's writer thread (SQLite): it must
  // not block.
  std::function<void(size_t done, size_t total)> progress;
  // Asked before each step (and before a small batch's one write): true stops the batch
  // with Cancelled, and what its earlier steps wrote is undone, so that
  // nothing of it stays. Never asked once the last step began: a batch that could not be
  // stopped lands whole.
  std::function<bool()> cancelled;
};
inline constexpr size_t kIngestProgressLines = 500;
// The same as IngestJsonl(store, clock, ws_id, jsonl), followed and stoppable.
Result<IngestReport> IngestJsonl(Store& store, const Clock& clock, const std::string& ws_id,
                                 std::string_view jsonl, const IngestControl& control);
// Both: `also` as above, followed and stoppable as here.
Result<IngestReport> IngestJsonl(Store& store, const Clock& clock, const std::string& ws_id,
                                 std::string_view jsonl,
                                 const std::function<Status(WriteTx&)>& also,
                                 const IngestControl& control);
// The same as IngestJsonl(store, clock, ws_id, jsonl, control) for lines already parsed:
// `lines` is an array whose item i is line i + 1 (episode.ingest's argument). The 64 KiB
// limit on a line's text does not apply; the schemas' limits on each field do.
Result<IngestReport> IngestObjects(Store& store, const Clock& clock, const std::string& ws_id,
                                   const nlohmann::json& lines, const IngestControl& control);
// A batch a connector built: the same checks as a line's (an item that breaks one is
// refused with InvalidArgument "item N: ..." and nothing is written), then written as
// IngestJsonl writes, with `also` in its last transaction (a connector's cursor). An empty
// batch is allowed when `also` is given.
Result<IngestReport> IngestItems(Store& store, const Clock& clock, const std::string& ws_id,
                                 std::vector<IngestItem> items,
                                 const std::function<Status(WriteTx&)>& also);

}  // namespace cortex
