#include "engines/world/ingest.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <variant>

#include "core/ids.h"
#include "core/json_schema.h"
#include "core/json_text.h"
#include "core/limits.h"
#include "core/time.h"
#include "engines/triage/triage.h"
#include "engines/world/identifiers.h"
#include "store/entities.h"
#include "store/episodes.h"
#include "store/workspaces.h"

namespace cortex {
namespace {

using nlohmann::json;

const JsonSchema& EntitySchema() {
  static const JsonSchema schema = *JsonSchema::Compile({
      {"type", "object"},
      {"additionalProperties", false},
      {"required", {"type", "name", "identifiers"}},
      {"properties",
       {{"type", {{"const", "entity"}}},
        {"name", {{"type", "string"}, {"minLength", 1}, {"maxLength", limits::kMaxNameChars}}},
        {"kind", {{"enum", {"person", "organization"}}}},
        {"identifiers",
         {{"type", "array"},
          {"minItems", 1},
          {"maxItems", 32},
          {"items", {{"type", "string"}, {"maxLength", limits::kMaxIdentifierChars}}}}},
        {"tags",
         {{"type", "array"},
          {"maxItems", limits::kMaxTagsPerEntity},
          {"items",
           {{"type", "string"},
            {"pattern", "^[a-z0-9][a-z0-9_-]*$"},
            {"maxLength", limits::kMaxTagChars}}}}}}},
  });
  return schema;
}

const JsonSchema& EpisodeSchema() {
  auto text = [](size_t max) { return json{{"type", "string"}, {"maxLength", max}}; };
  static const JsonSchema schema = *JsonSchema::Compile({
      {"type", "object"},
      {"additionalProperties", false},
      {"required", {"type", "kind", "occurred_at", "summary"}},
      {"properties",
       {{"type", {{"const", "episode"}}},
        {"kind", {{"enum", kEpisodeKinds}}},
        {"occurred_at", text(64)},
        {"ends_at", text(64)},
        {"counterparty", text(limits::kMaxIdentifierChars)},
        {"channel", {{"type", "string"}, {"pattern", "^[a-z][a-z0-9_-]*$"}, {"maxLength", 32}}},
        {"subject", text(limits::kMaxSubjectChars)},
        {"summary",
         {{"type", "string"}, {"minLength", 1}, {"maxLength", limits::kMaxSummaryChars}}},
        {"body", text(limits::kMaxBodyChars)},
        {"thread", text(200)},
        {"external_id", {{"type", "string"}, {"minLength", 1}, {"maxLength", 200}}}}},
  });
  return schema;
}

struct Line {
  size_t number;
  IngestItem item;
};

Status LineError(size_t n, const std::string& msg) {
  return Status::InvalidArgument("line " + std::to_string(n) + ": " + msg);
}

Result<TimePoint> FieldTime(const json& obj, const char* field) {
  auto t = ParseTime(obj.at(field).get<std::string>());
  if (!t.ok())
    return Status::InvalidArgument("field '" + std::string(field) + "': " + t.status().message());
  return t;
}

std::string Str(const json& obj, const char* field) {
  auto it = obj.find(field);
  return it == obj.end() ? std::string() : it->get<std::string>();
}

bool IsBlock(const std::string& kind) { return kind == "calendar_block" || kind == "meeting"; }

// A counterparty as a line gives it, in the form IncomingEpisode holds it.
Result<std::string> CounterpartyRef(const std::string& cp) {
  if (cp.rfind("entity_", 0) == 0 && cp.find('@') == std::string::npos) {  // not an address
    if (!IsId(cp, "entity_")) return Status::InvalidArgument("malformed entity id");
    return cp;
  }
  return NormalizeIdentifier(cp);
}

// What holds of an episode however it came, beyond its fields' own limits: a block has an
// end after its start, and everything else a counterparty.
Status CheckEpisode(const IncomingEpisode& ep) {
  const Episode& e = ep.episode;
  if (e.ends_at) {
    if (*e.ends_at <= e.occurred_at) {
      return Status::InvalidArgument("field 'ends_at': must be after occurred_at");
    }
  } else if (IsBlock(e.kind)) {
    return Status::InvalidArgument("field 'ends_at': required for a " + e.kind);
  }
  if (ep.counterparty.empty() && !IsBlock(e.kind)) {
    return Status::InvalidArgument("field 'counterparty': required for a " + e.kind);
  }
  return Status::Ok();
}

// An entity as it is written, however it came: each identifier once, in the order given;
// the tags sorted, each once.
void Tidy(IncomingEntity& e) {
  std::set<std::string> seen;
  std::vector<std::string> unique;
  for (std::string& id : e.identifiers) {
    if (seen.insert(id).second) unique.push_back(std::move(id));
  }
  e.identifiers = std::move(unique);
  std::sort(e.tags.begin(), e.tags.end());
  e.tags.erase(std::unique(e.tags.begin(), e.tags.end()), e.tags.end());
}

// Line `n`, parsed: checked against the line schemas and turned into what is written.
Result<Line> ReadLine(size_t n, const json& obj) {
  if (!obj.is_object()) return LineError(n, "expected a JSON object");
  auto type = obj.find("type");
  if (type == obj.end() || !type->is_string()) {
    return LineError(n, "field 'type': required, \"entity\" or \"episode\"");
  }
  if (*type == "entity") {
    Status st = EntitySchema().Validate(obj);
    if (!st.ok()) return LineError(n, st.message());
    IncomingEntity e{obj["name"], obj.value("kind", "person"), {}, {}};
    for (size_t i = 0; i < obj["identifiers"].size(); ++i) {
      auto id = NormalizeIdentifier(obj["identifiers"][i]);
      if (!id.ok()) {
        return LineError(n,
                         "field 'identifiers." + std::to_string(i) + "': " + id.status().message());
      }
      e.identifiers.push_back(std::move(*id));
    }
    if (obj.contains("tags")) e.tags = obj["tags"].get<std::vector<std::string>>();
    Tidy(e);
    return Line{n, std::move(e)};
  }
  if (*type != "episode") {
    return LineError(n, "field 'type': must be \"entity\" or \"episode\"");
  }
  Status st = EpisodeSchema().Validate(obj);
  if (!st.ok()) return LineError(n, st.message());

  IncomingEpisode ep;
  Episode& e = ep.episode;
  e.kind = obj["kind"];
  auto occurred = FieldTime(obj, "occurred_at");
  if (!occurred.ok()) return LineError(n, occurred.status().message());
  e.occurred_at = *occurred;
  if (obj.contains("ends_at")) {
    auto ends = FieldTime(obj, "ends_at");
    if (!ends.ok()) return LineError(n, ends.status().message());
    e.ends_at = *ends;
  }
  std::string cp = Str(obj, "counterparty");
  if (!cp.empty()) {
    auto ref = CounterpartyRef(cp);
    if (!ref.ok()) return LineError(n, "field 'counterparty': " + ref.status().message());
    ep.counterparty = std::move(*ref);
  }
  e.channel = obj.value("channel", IsBlock(e.kind) ? "calendar" : "email");
  e.subject = Str(obj, "subject");
  e.summary = obj["summary"];
  e.body = Str(obj, "body");
  e.thread = Str(obj, "thread");
  if (obj.contains("external_id")) e.external_id = obj["external_id"].get<std::string>();
  st = CheckEpisode(ep);
  if (!st.ok()) return LineError(n, st.message());
  return Line{n, std::move(ep)};
}

// A typed item's fields, checked as the line schemas check a line's: the same limits, in
// characters; text that is not UTF-8 is refused as a line that is not JSON would be.
Status CheckText(const std::string& text, const char* field, size_t min_chars, size_t max_chars) {
  if (!IsValidUtf8(text))
    return Status::InvalidArgument(std::string("field '") + field + "': not UTF-8");
  size_t chars = 0;
  for (char c : text) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  if (chars < min_chars || chars > max_chars) {
    return Status::InvalidArgument(std::string("field '") + field + "': " + std::to_string(chars) +
                                   " characters, not " + std::to_string(min_chars) + " to " +
                                   std::to_string(max_chars));
  }
  return Status::Ok();
}

// `s` matches ^[a-z][a-z0-9_-]*$ (with `digit_first`, ^[a-z0-9][a-z0-9_-]*$), at most `max`.
bool IsLowerWord(const std::string& s, size_t max, bool digit_first) {
  if (s.empty() || s.size() > max) return false;
  auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!lower(s[0]) && !(digit_first && digit(s[0]))) return false;
  for (char c : s) {
    if (!lower(c) && !digit(c) && c != '_' && c != '-') return false;
  }
  return true;
}

Status CheckIdentifier(const std::string& id, const char* field) {
  CORTEX_RETURN_IF_ERROR(CheckText(id, field, 1, limits::kMaxIdentifierChars));
  auto normal = NormalizeIdentifier(id);
  if (!normal.ok() || *normal != id) {
    return Status::InvalidArgument(std::string("field '") + field + "': '" + id +
                                   "' is not in normal form");
  }
  return Status::Ok();
}

Status CheckItem(const IngestItem& item) {
  if (const auto* entity = std::get_if<IncomingEntity>(&item)) {
    CORTEX_RETURN_IF_ERROR(CheckText(entity->name, "name", 1, limits::kMaxNameChars));
    if (entity->kind != "person" && entity->kind != "organization") {
      return Status::InvalidArgument("field 'kind': must be person or organization");
    }
    if (entity->identifiers.empty() || entity->identifiers.size() > 32) {
      return Status::InvalidArgument("field 'identifiers': 1 to 32 of them");
    }
    for (const std::string& id : entity->identifiers) {
      CORTEX_RETURN_IF_ERROR(CheckIdentifier(id, "identifiers"));
    }
    if (entity->tags.size() > limits::kMaxTagsPerEntity) {
      return Status::InvalidArgument("field 'tags': too many");
    }
    for (const std::string& tag : entity->tags) {
      if (!IsLowerWord(tag, limits::kMaxTagChars, /*digit_first=*/true)) {
        return Status::InvalidArgument("field 'tags': '" + tag + "' is not a tag");
      }
    }
    return Status::Ok();
  }
  const auto& ep = std::get<IncomingEpisode>(item);
  const Episode& e = ep.episode;
  if (std::find(kEpisodeKinds.begin(), kEpisodeKinds.end(), e.kind) == kEpisodeKinds.end()) {
    return Status::InvalidArgument("field 'kind': '" + e.kind + "' is not an episode kind");
  }
  if (!InTimeRange(e.occurred_at)) {
    return Status::InvalidArgument("field 'occurred_at': out of range");
  }
  if (e.ends_at && !InTimeRange(*e.ends_at)) {
    return Status::InvalidArgument("field 'ends_at': out of range");
  }
  if (!IsLowerWord(e.channel, 32, /*digit_first=*/false)) {
    return Status::InvalidArgument("field 'channel': '" + e.channel + "' is not a channel");
  }
  CORTEX_RETURN_IF_ERROR(CheckText(e.subject, "subject", 0, limits::kMaxSubjectChars));
  CORTEX_RETURN_IF_ERROR(CheckText(e.summary, "summary", 1, limits::kMaxSummaryChars));
  CORTEX_RETURN_IF_ERROR(CheckText(e.body, "body", 0, limits::kMaxBodyChars));
  CORTEX_RETURN_IF_ERROR(CheckText(e.thread, "thread", 0, 200));
  if (e.external_id) CORTEX_RETURN_IF_ERROR(CheckText(*e.external_id, "external_id", 1, 200));
  if (!ep.counterparty.empty()) {
    auto ref = CounterpartyRef(ep.counterparty);
    if (!ref.ok() || *ref != ep.counterparty) {
      return Status::InvalidArgument("field 'counterparty': '" + ep.counterparty +
                                     "' is neither an entity id nor an identifier in normal form");
    }
  }
  return CheckEpisode(ep);
}

Status TooManyLines(size_t n) {
  return LineError(n,
                   "a batch holds at most " + std::to_string(limits::kMaxIngestLines) + " lines");
}

// What a batch carries from one step to the next (a batch of one step has one).
struct BatchState {
  std::string world_version;  // the version the batch stamps on its episodes
  std::string previous;       // the workspace's, before the batch
  bool changed = false;
  // Counterparties resolved so far, by the reference the lines use (identifier or entity
  // id): a batch usually names the same few people many times. Kept from step to step: the
  // workspace is held meanwhile, so only the batch's own entity lines change them.
  std::unordered_map<std::string, Entity> known;
};

// Applies validated lines inside a write transaction: all of a batch, or one step's share.
class BatchWriter {
 public:
  BatchWriter(WriteTx& tx, const Clock& clock, const std::string& ws, BatchState& state,
              IngestReport& report)
      : tx_(tx), clock_(clock), ws_(ws), state_(state), report_(report), triager_(tx, clock, ws) {}

  // First: episodes are stamped with the version this batch creates; it is only published
  // on the workspace if the batch changes something.
  Status Start() {
    auto workspace = tx_.workspaces().Get(ws_);
    if (!workspace.ok()) return workspace.status();
    state_ = BatchState{
        NewIdAfter("wv_", clock_, workspace->world_version), workspace->world_version, false, {}};
    return Status::Ok();
  }

  Status Apply(const Line* first, const Line* last) {
    for (const Line* line = first; line != last; ++line) {
      Status st = std::holds_alternative<IncomingEntity>(line->item)
                      ? ApplyEntity(std::get<IncomingEntity>(line->item))
                      : ApplyEpisode(std::get<IncomingEpisode>(line->item));
      // A line's own mistake names the line; a failure of the store (or of storing held
      // decisions, which no one line caused) keeps its code.
      if (!st.ok()) {
        return st.code() == Code::kInvalidArgument ? LineError(line->number, st.message()) : st;
      }
    }
    return Status::Ok();
  }

  // Before the transaction commits: the triage outcomes held back are stored, and at the
  // end of the batch (`whole`) its version is published if anything changed.
  Status Finish(bool whole) {
    CORTEX_RETURN_IF_ERROR(triager_.Finish());
    if (!whole) return Status::Ok();
    if (!state_.changed) {
      report_.world_version = state_.previous;
      return Status::Ok();
    }
    CORTEX_RETURN_IF_ERROR(tx_.workspaces().SetWorldVersion(ws_, state_.world_version));
    report_.world_version = state_.world_version;
    return Status::Ok();
  }

 private:
  Status ApplyEntity(const IncomingEntity& line) {
    state_.known.clear();  // the line may rename, tag or add identifiers to a cached entity
    std::optional<Entity> existing;
    for (const std::string& ident : line.identifiers) {
      auto found = tx_.entities().FindByIdentifier(ws_, ident);
      if (found.ok()) {
        if (existing && existing->id != found->id) {
          return Status::InvalidArgument("field 'identifiers': '" + ident +
                                         "' already belongs to another entity (" + found->id + ")");
        }
        existing = std::move(*found);
      } else if (found.status().code() != Code::kNotFound) {
        return found.status();
      }
    }
    if (!existing) {
      Entity e{NewId("entity_", clock_), ws_,       line.kind,   line.name,
               line.identifiers,         line.tags, clock_.Now()};
      CORTEX_RETURN_IF_ERROR(tx_.entities().Insert(e));
      ++report_.entities_added;
      state_.changed = true;
      return Status::Ok();
    }
    // Merge: the line's name wins; identifiers and tags are added, never removed.
    bool updated = false;
    if (existing->name != line.name) {
      CORTEX_RETURN_IF_ERROR(tx_.entities().SetName(ws_, existing->id, line.name));
      updated = true;
    }
    auto has = [](const std::vector<std::string>& v, const std::string& s) {
      return std::find(v.begin(), v.end(), s) != v.end();
    };
    for (const std::string& ident : line.identifiers) {
      if (has(existing->identifiers, ident)) continue;
      CORTEX_RETURN_IF_ERROR(tx_.entities().AddIdentifier(ws_, existing->id, ident));
      updated = true;
    }
    for (const std::string& tag : line.tags) {
      if (has(existing->tags, tag)) continue;
      CORTEX_RETURN_IF_ERROR(tx_.entities().AddTag(ws_, existing->id, tag));
      updated = true;
    }
    if (updated) {
      ++report_.entities_updated;
      state_.changed = true;
    }
    return Status::Ok();
  }

  Status ApplyEpisode(const IncomingEpisode& line) {
    const std::string& wv = state_.world_version;
    Episode e = line.episode;
    if (e.external_id) {
      auto dup = tx_.episodes().ExternalIdExists(ws_, *e.external_id);
      if (!dup.ok()) return dup.status();
      if (*dup) {
        ++report_.duplicates;
        return Status::Ok();
      }
    }
    const Entity* who = nullptr;
    if (!line.counterparty.empty()) {
      auto cached = state_.known.find(line.counterparty);
      if (cached == state_.known.end()) {
        auto entity = ResolveEntity(tx_, ws_, line.counterparty);
        if (entity.ok()) {
          cached = state_.known.emplace(line.counterparty, std::move(*entity)).first;
        } else if (entity.status().code() != Code::kNotFound) {
          return entity.status();
        } else if (line.counterparty.rfind("entity_", 0) == 0 &&
                   line.counterparty.find('@') == std::string::npos) {
          return Status::InvalidArgument("field 'counterparty': no entity " + line.counterparty +
                                         " in this workspace");
        } else {
          // First contact: an address we have never seen becomes a new entity.
          Entity fresh{NewId("entity_", clock_), ws_, "person",    line.counterparty,
                       {line.counterparty},      {},  clock_.Now()};
          CORTEX_RETURN_IF_ERROR(tx_.entities().Insert(fresh));
          ++report_.entities_added;
          cached = state_.known.emplace(line.counterparty, std::move(fresh)).first;
        }
      }
      who = &cached->second;
      e.entity_id = who->id;
    }
    e.id = NewId("ep_", clock_);
    e.workspace_id = ws_;
    e.world_version = wv;
    e.created_at = clock_.Now();
    if (IsInbound(e.kind)) {
      CORTEX_RETURN_IF_ERROR(triager_.Triage(e, who, wv));  // stores the episode too
      ++report_.triaged;
    } else {
      CORTEX_RETURN_IF_ERROR(tx_.episodes().Insert(e));
    }
    ++report_.episodes_added;
    state_.changed = true;
    return Status::Ok();
  }

  WriteTx& tx_;
  const Clock& clock_;
  const std::string& ws_;
  BatchState& state_;
  IngestReport& report_;
  Triager triager_;
};

}  // namespace

Result<IngestReport> IngestJsonl(Store& store, const Clock& clock, const std::string& ws_id,
                                 std::string_view jsonl) {
  return IngestJsonl(store, clock, ws_id, jsonl, nullptr);
}

Result<IngestReport> IngestJsonl(Store& store, const Clock& clock, const std::string& ws_id,
                                 std::string_view jsonl,
                                 const std::function<Status(WriteTx&)>& also) {
  return IngestJsonl(store, clock, ws_id, jsonl, also, IngestControl{});
}

nlohmann::json IngestReportJson(const IngestReport& report, std::string_view status) {
  return {{"status", status},
          {"lines", report.lines},
          {"episodes_added", report.episodes_added},
          {"entities_added", report.entities_added},
          {"entities_updated", report.entities_updated},
          {"duplicates", report.duplicates},
          {"triaged", report.triaged},
          {"world_version", report.world_version}};
}

namespace {
constexpr char kCancelledMessage[] = "the ingest was cancelled; nothing of it was written";
}  // namespace

Result<IngestReport> IngestJsonl(Store& store, const Clock& clock, const std::string& ws_id,
                                 std::string_view jsonl, const IngestControl& control) {
  return IngestJsonl(store, clock, ws_id, jsonl, nullptr, control);
}

namespace {

// Writes a batch's validated lines (see IngestJsonl).
Result<IngestReport> WriteLines(Store& store, const Clock& clock, const std::string& ws_id,
                                const std::vector<Line>& lines,
                                const std::function<Status(WriteTx&)>& also,
                                const IngestControl& control) {
  auto stopped = [&] { return control.cancelled && control.cancelled(); };
  if (lines.empty() && !also) return Status::InvalidArgument("the batch is empty");

  IngestReport report;
  BatchState state;
  const Line* all = lines.data();
  const size_t n = lines.size();
  Status st;
  if (n <= limits::kIngestLinesPerStep) {
    auto pass = store.EnterWorkspace(ws_id);
    if (stopped()) return Status::Cancelled(kCancelledMessage);
    st = store.Write([&](WriteTx& tx) {
      report = IngestReport{};
      BatchWriter writer(tx, clock, ws_id, state, report);
      CORTEX_RETURN_IF_ERROR(writer.Start());
      CORTEX_RETURN_IF_ERROR(writer.Apply(all, all + n));
      CORTEX_RETURN_IF_ERROR(writer.Finish(/*whole=*/true));
      return also ? also(tx) : Status::Ok();
    });
  } else {
    size_t next = 0;      // the first line of the next step
    size_t reported = 0;  // the lines last told to control.progress
    st = store.WriteInSteps(ws_id, [&](WriteTx& tx, int step) -> Result<bool> {
      // Between steps: the one before has committed.
      if (stopped()) return Status::Cancelled(kCancelledMessage);
      if (step > 0 && control.progress && next - reported >= kIngestProgressLines) {
        control.progress(next, n);
        reported = next;
      }
      BatchWriter writer(tx, clock, ws_id, state, report);
      if (step == 0) {
        report = IngestReport{};
        next = 0;
        reported = 0;
        CORTEX_RETURN_IF_ERROR(writer.Start());
      }
      // A step's lines are the writer's time taken from others: bounded in count and time.
      const auto deadline = std::chrono::steady_clock::now() + limits::kIngestStepBudget;
      const size_t first = next;
      do {
        CORTEX_RETURN_IF_ERROR(writer.Apply(all + next, all + next + 1));
        ++next;
      } while (next < n && next - first < limits::kIngestLinesPerStep &&
               std::chrono::steady_clock::now() < deadline);
      CORTEX_RETURN_IF_ERROR(writer.Finish(/*whole=*/next == n));
      if (next < n) return false;
      if (also) CORTEX_RETURN_IF_ERROR(also(tx));
      return true;
    });
  }
  if (!st.ok()) return st;
  report.lines = lines.size();
  if (control.progress) control.progress(n, n);
  return report;
}

}  // namespace

Result<IngestReport> IngestJsonl(Store& store, const Clock& clock, const std::string& ws_id,
                                 std::string_view jsonl,
                                 const std::function<Status(WriteTx&)>& also,
                                 const IngestControl& control) {
  std::vector<Line> lines;
  size_t number = 0;
  size_t pos = 0;
  while (pos < jsonl.size()) {
    size_t end = jsonl.find('\n', pos);
    if (end == std::string_view::npos) end = jsonl.size();
    std::string_view text = jsonl.substr(pos, end - pos);
    pos = end + 1;
    ++number;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.find_first_not_of(" \t") == std::string_view::npos) continue;  // blank line
    if (text.size() > limits::kMaxIngestLineBytes) {
      return LineError(number,
                       "longer than " + std::to_string(limits::kMaxIngestLineBytes) + " bytes");
    }
    if (lines.size() == limits::kMaxIngestLines) return TooManyLines(number);
    json obj = ParseJson(text);
    if (obj.is_discarded()) return LineError(number, "not valid JSON");
    auto line = ReadLine(number, obj);
    if (!line.ok()) return line.status();
    lines.push_back(std::move(*line));
  }
  return WriteLines(store, clock, ws_id, lines, also, control);
}

Result<IngestReport> IngestObjects(Store& store, const Clock& clock, const std::string& ws_id,
                                   const nlohmann::json& items, const IngestControl& control) {
  if (!items.is_array()) return Status::InvalidArgument("the batch must be an array of lines");
  std::vector<Line> lines;
  lines.reserve(std::min(items.size(), limits::kMaxIngestLines));
  for (const json& item : items) {
    const size_t number = lines.size() + 1;
    if (lines.size() == limits::kMaxIngestLines) return TooManyLines(number);
    auto line = ReadLine(number, item);
    if (!line.ok()) return line.status();
    lines.push_back(std::move(*line));
  }
  return WriteLines(store, clock, ws_id, lines, nullptr, control);
}

Result<IngestReport> IngestItems(Store& store, const Clock& clock, const std::string& ws_id,
                                 std::vector<IngestItem> items,
                                 const std::function<Status(WriteTx&)>& also) {
  if (items.size() > limits::kMaxIngestLines) {
    return Status::InvalidArgument("a batch holds at most " +
                                   std::to_string(limits::kMaxIngestLines) + " items");
  }
  std::vector<Line> lines;
  lines.reserve(items.size());
  for (IngestItem& item : items) {
    const size_t number = lines.size() + 1;
    Status st = CheckItem(item);
    if (!st.ok()) {
      return Status::InvalidArgument("item " + std::to_string(number) + ": " + st.message());
    }
    if (auto* entity = std::get_if<IncomingEntity>(&item)) Tidy(*entity);
    lines.push_back(Line{number, std::move(item)});
  }
  return WriteLines(store, clock, ws_id, lines, also, IngestControl{});
}

}  // namespace cortex
