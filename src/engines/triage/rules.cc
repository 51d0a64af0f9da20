#include "engines/triage/rules.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "core/ids.h"
#include "core/json_text.h"
#include "engines/triage/signals.h"
#include "engines/world/identifiers.h"
#include "store/episodes.h"
#include "store/rules.h"
#include "store/workspaces.h"

namespace cortex {
namespace {

constexpr size_t kMaxRules = 500;
constexpr size_t kMaxSummaryChars = 300;
constexpr size_t kMaxListItems = 100;

const char* const kWeekdays[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// ": the signals are a, b, ...", for an error naming an unknown one.
std::string KnownSignals() {
  std::string out;
  for (SignalKind k : AllOf<SignalKind>()) {
    out += out.empty() ? ": the signals are " : ", ";
    out += Name(k);
  }
  return out;
}

int Specificity(const Rule& r) {
  const RuleConditions& c = r.when;
  return static_cast<int>(c.signals.size() + c.not_signals.size()) + !c.tags.empty() +
         !c.counterparties.empty() + !c.channels.empty() + !c.words.empty() +
         (c.from_minute.has_value() ? 1 : 0) + (c.weekdays != 0 ? 1 : 0);
}

// --- YAML parsing ---

class FileError {
 public:
  static Status At(const YAML::Node& node, const std::string& msg) {
    int line = node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
    return Status::InvalidArgument("line " + std::to_string(line) + ": " + msg);
  }
};

Result<std::string> Scalar(const YAML::Node& node, const std::string& field, size_t max_len) {
  if (!node.IsScalar()) return FileError::At(node, "'" + field + "' must be a string");
  std::string v = node.as<std::string>();
  if (v.empty()) return FileError::At(node, "'" + field + "' must not be empty");
  if (v.size() > max_len) {
    return FileError::At(
        node, "'" + field + "' is longer than " + std::to_string(max_len) + " characters");
  }
  return v;
}

// A string or a list of strings.
Result<std::vector<std::string>> List(const YAML::Node& node, const std::string& field) {
  std::vector<std::string> out;
  if (node.IsScalar()) {
    auto v = Scalar(node, field, 320);
    if (!v.ok()) return v.status();
    out.push_back(*v);
    return out;
  }
  if (!node.IsSequence() || node.size() == 0) {
    return FileError::At(node, "'" + field + "' must be a string or a non-empty list of strings");
  }
  if (node.size() > kMaxListItems) {
    return FileError::At(
        node, "'" + field + "' has more than " + std::to_string(kMaxListItems) + " items");
  }
  for (const YAML::Node& item : node) {
    auto v = Scalar(item, field, 320);
    if (!v.ok()) return v.status();
    out.push_back(*v);
  }
  return out;
}

// "HH:MM" -> minutes after midnight.
Result<int> ClockTime(const YAML::Node& node, const std::string& field) {
  auto s = Scalar(node, field, 5);
  if (!s.ok()) return s.status();
  const std::string& v = *s;
  if (v.size() != 5 || v[2] != ':' || !std::isdigit(static_cast<unsigned char>(v[0])) ||
      !std::isdigit(static_cast<unsigned char>(v[1])) ||
      !std::isdigit(static_cast<unsigned char>(v[3])) ||
      !std::isdigit(static_cast<unsigned char>(v[4]))) {
    return FileError::At(node, "'" + field + "' must be a time of day like 09:30");
  }
  int h = (v[0] - '0') * 10 + (v[1] - '0');
  int m = (v[3] - '0') * 10 + (v[4] - '0');
  if (h > 24 || m > 59 || (h == 24 && m != 0)) {
    return FileError::At(node, "'" + field + "' must be between 00:00 and 24:00");
  }
  return h * 60 + m;
}

// "09:00-17:00" -> {540, 1020}.
Status TimeWindow(const YAML::Node& node, const std::string& field, int* from, int* until) {
  auto s = Scalar(node, field, 11);
  if (!s.ok()) return s.status();
  size_t dash = s->find('-');
  if (dash == std::string::npos) {
    return FileError::At(node, "'" + field + "' must look like 09:00-17:00");
  }
  YAML::Node a(s->substr(0, dash)), b(s->substr(dash + 1));
  auto f = ClockTime(a, field);
  auto u = ClockTime(b, field);
  if (!f.ok() || !u.ok() || *f == *u) {
    return FileError::At(node, "'" + field + "' must look like 09:00-17:00");
  }
  *from = *f;
  *until = *u;
  return Status::Ok();
}

Result<unsigned> Weekdays(const YAML::Node& node, const std::string& field) {
  auto list = List(node, field);
  if (!list.ok()) return list.status();
  unsigned mask = 0;
  for (const std::string& raw : *list) {
    std::string d = AsciiLower(raw).substr(0, 3);
    auto it = std::find(std::begin(kWeekdays), std::end(kWeekdays), d);
    if (raw.size() < 3 || it == std::end(kWeekdays)) {
      return FileError::At(node, "'" + raw + "' is not a weekday (mon, tue, ... sun)");
    }
    mask |= 1u << (it - std::begin(kWeekdays));
  }
  return mask;
}

Status CheckKeys(const YAML::Node& map, const std::set<std::string>& allowed,
                 const std::string& where) {
  for (const auto& kv : map) {
    std::string key = kv.first.as<std::string>();
    if (!allowed.count(key)) {
      std::string list;
      for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return FileError::At(kv.first,
                           "unknown key '" + key + "' in " + where + " (expected " + list + ")");
    }
  }
  return Status::Ok();
}

Status ParseConditions(const YAML::Node& when, RuleConditions* c) {
  if (!when.IsMap()) return FileError::At(when, "'when' must be a map of conditions");
  CORTEX_RETURN_IF_ERROR(CheckKeys(
      when,
      {"signals", "not_signals", "tags", "counterparty", "channel", "words", "hours", "weekdays"},
      "'when'"));
  auto signals = [&](const char* key, std::vector<SignalKind>* out) -> Status {
    if (!when[key]) return Status::Ok();
    auto list = List(when[key], key);
    if (!list.ok()) return list.status();
    for (const std::string& s : *list) {
      auto kind = Parse<SignalKind>(s);
      if (!kind) return FileError::At(when[key], "unknown signal '" + s + "'" + KnownSignals());
      out->push_back(*kind);
    }
    return Status::Ok();
  };
  CORTEX_RETURN_IF_ERROR(signals("signals", &c->signals));
  CORTEX_RETURN_IF_ERROR(signals("not_signals", &c->not_signals));
  if (when["tags"]) {
    auto list = List(when["tags"], "tags");
    if (!list.ok()) return list.status();
    for (const std::string& t : *list) c->tags.push_back(AsciiLower(t));
  }
  if (when["counterparty"]) {
    auto list = List(when["counterparty"], "counterparty");
    if (!list.ok()) return list.status();
    for (const std::string& who : *list) {
      if (who.rfind("entity_", 0) == 0) {
        if (!IsId(who, "entity_"))
          return FileError::At(when["counterparty"], "malformed entity id '" + who + "'");
        c->counterparties.push_back(who);
        continue;
      }
      auto ident = NormalizeIdentifier(who);
      if (!ident.ok()) return FileError::At(when["counterparty"], ident.status().message());
      c->counterparties.push_back(*ident);
    }
  }
  if (when["channel"]) {
    auto list = List(when["channel"], "channel");
    if (!list.ok()) return list.status();
    for (const std::string& ch : *list) c->channels.push_back(AsciiLower(ch));
  }
  if (when["words"]) {
    auto list = List(when["words"], "words");
    if (!list.ok()) return list.status();
    for (const std::string& w : *list) c->words.push_back(AsciiLower(w));
  }
  if (when["hours"]) {
    int from = 0, until = 0;
    CORTEX_RETURN_IF_ERROR(TimeWindow(when["hours"], "hours", &from, &until));
    c->from_minute = from;
    c->until_minute = until;
  }
  if (when["weekdays"]) {
    auto mask = Weekdays(when["weekdays"], "weekdays");
    if (!mask.ok()) return mask.status();
    c->weekdays = *mask;
  }
  return Status::Ok();
}

Status ParseEffect(const YAML::Node& then, Rule* r) {
  if (!then.IsMap()) return FileError::At(then, "'then' must be a map");
  CORTEX_RETURN_IF_ERROR(CheckKeys(then, {"triage", "max_level", "block", "urgent"}, "'then'"));
  if (then["triage"]) {
    auto cls = Scalar(then["triage"], "triage", 64);
    if (!cls.ok()) return cls.status();
    r->then.triage_class = Parse<TriageClass>(*cls);
    if (!r->then.triage_class) {
      return FileError::At(then["triage"],
                           "'" + *cls +
                               "' is not a triage class (interrupt_now, surface_at_transition, "
                               "daily_digest, handle_silently)");
    }
  }
  try {
    if (then["max_level"]) {
      int level = then["max_level"].as<int>();
      if (level < 0 || level > 3)
        return FileError::At(then["max_level"], "'max_level' must be 0-3");
      r->then.max_level = level;
    }
    if (then["block"]) r->then.block = then["block"].as<bool>();
    if (then["urgent"]) r->then.urgent = then["urgent"].as<bool>();
  } catch (const YAML::Exception&) {
    return FileError::At(then, "'max_level' must be an integer, 'block' and 'urgent' true/false");
  }
  bool action_effect = r->then.max_level || r->then.block || r->then.urgent;
  if (r->then.triage_class.has_value() == action_effect) {
    return FileError::At(then,
                         "'then' needs either 'triage' (a triage rule) or any of "
                         "'max_level', 'block', 'urgent' (an action rule), not both");
  }
  r->kind = action_effect ? RuleKind::kAction : RuleKind::kTriage;
  return Status::Ok();
}

Result<Rule> ParseRule(const YAML::Node& node, int position) {
  if (!node.IsMap()) return FileError::At(node, "each rule must be a map");
  CORTEX_RETURN_IF_ERROR(CheckKeys(
      node, {"name", "summary", "when", "then", "priority", "evidence", "action"}, "a rule"));
  Rule r;
  r.position = position;
  r.origin = RuleOrigin::kUser;
  if (!node["name"]) return FileError::At(node, "rule is missing 'name'");
  auto name = Scalar(node["name"], "name", 100);
  if (!name.ok()) return name.status();
  for (char c : *name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) {
      return FileError::At(node["name"], "'name' may hold only letters, digits, '-' and '_'");
    }
  }
  r.name = *name;
  if (!node["summary"]) return FileError::At(node, "rule '" + r.name + "' is missing 'summary'");
  auto summary = Scalar(node["summary"], "summary", kMaxSummaryChars);
  if (!summary.ok()) return summary.status();
  r.summary = *summary;
  if (!node["when"]) return FileError::At(node, "rule '" + r.name + "' is missing 'when'");
  if (!node["then"]) return FileError::At(node, "rule '" + r.name + "' is missing 'then'");
  CORTEX_RETURN_IF_ERROR(ParseConditions(node["when"], &r.when));
  CORTEX_RETURN_IF_ERROR(ParseEffect(node["then"], &r));
  if (node["priority"]) {
    try {
      r.priority = node["priority"].as<int>();
    } catch (const YAML::Exception&) {
      return FileError::At(node["priority"], "'priority' must be an integer");
    }
    if (r.priority < -1000 || r.priority > 1000) {
      return FileError::At(node["priority"], "'priority' must be between -1000 and 1000");
    }
  }
  if (r.kind == RuleKind::kAction) {
    r.action_class = "communicate";
    if (node["action"]) {
      auto cls = Scalar(node["action"], "action", 64);
      if (!cls.ok()) return cls.status();
      if (*cls != "communicate") {
        return FileError::At(node["action"], "unknown action class '" + *cls + "' (communicate)");
      }
    }
  } else if (node["action"]) {
    return FileError::At(node["action"], "'action' applies only to action rules");
  }
  if (node["evidence"]) {
    auto list = List(node["evidence"], "evidence");
    if (!list.ok()) return list.status();
    r.evidence = *list;
  }
  return r;
}

Status ParseSettings(const YAML::Node& node, WorkspaceSettings* s) {
  if (!node.IsMap()) return FileError::At(node, "'settings' must be a map");
  CORTEX_RETURN_IF_ERROR(
      CheckKeys(node, {"utc_offset", "working_hours", "working_days", "digest_time", "digest_to"},
                "'settings'"));
  if (node["utc_offset"]) {
    auto v = Scalar(node["utc_offset"], "utc_offset", 6);
    if (!v.ok()) return v.status();
    const std::string& o = *v;
    if (o.size() != 6 || (o[0] != '+' && o[0] != '-')) {
      return FileError::At(node["utc_offset"], "'utc_offset' must look like +02:00 or -05:00");
    }
    auto hm = ClockTime(YAML::Node(o.substr(1)), "utc_offset");
    if (!hm.ok() || *hm > 14 * 60) {
      return FileError::At(node["utc_offset"], "'utc_offset' must be within ±14:00");
    }
    s->utc_offset_minutes = (o[0] == '-' ? -1 : 1) * *hm;
  }
  if (node["working_hours"]) {
    CORTEX_RETURN_IF_ERROR(TimeWindow(node["working_hours"], "working_hours", &s->work_start_minute,
                                      &s->work_end_minute));
  }
  if (node["working_days"]) {
    auto mask = Weekdays(node["working_days"], "working_days");
    if (!mask.ok()) return mask.status();
    s->work_days = *mask;
  }
  if (node["digest_time"]) {
    auto t = ClockTime(node["digest_time"], "digest_time");
    if (!t.ok()) return t.status();
    if (*t == 24 * 60)
      return FileError::At(node["digest_time"], "'digest_time' must be before 24:00");
    s->digest_minute = *t;
  }
  if (node["digest_to"]) {
    auto v = Scalar(node["digest_to"], "digest_to", 320);
    if (!v.ok()) return v.status();
    s->digest_to = *v;
  }
  return Status::Ok();
}

}  // namespace

std::string ConfidenceLabel(const Rule& rule, const ConfidenceThresholds& t) {
  int64_t total = rule.support + rule.contradictions;
  double ratio = total == 0 ? 0.0 : static_cast<double>(rule.support) / static_cast<double>(total);
  if (rule.support >= t.strong_min_support && ratio >= t.strong_min_ratio) return "strong_pattern";
  if (rule.support >= t.pretty_min_support && ratio >= t.pretty_min_ratio) return "pretty_sure";
  return "just_guessing";
}

bool RuleMatches(const Rule& rule, const Situation& s) {
  const RuleConditions& c = rule.when;
  auto has_signal = [&](SignalKind kind) {
    return std::any_of(s.signals.begin(), s.signals.end(),
                       [&](const Signal& sig) { return sig.kind == kind; });
  };
  for (SignalKind k : c.signals) {
    if (!has_signal(k)) return false;
  }
  for (SignalKind k : c.not_signals) {
    if (has_signal(k)) return false;
  }
  if (!c.tags.empty()) {
    if (s.counterparty == nullptr) return false;
    bool any = std::any_of(c.tags.begin(), c.tags.end(),
                           [&](const std::string& t) { return Contains(s.counterparty->tags, t); });
    if (!any) return false;
  }
  if (!c.counterparties.empty()) {
    if (s.counterparty == nullptr) return false;
    bool any =
        std::any_of(c.counterparties.begin(), c.counterparties.end(), [&](const std::string& who) {
          return who == s.counterparty->id || Contains(s.counterparty->identifiers, who);
        });
    if (!any) return false;
  }
  if (!c.channels.empty() && (s.episode == nullptr || !Contains(c.channels, s.episode->channel))) {
    return false;
  }
  if (!c.words.empty()) {
    if (s.episode == nullptr) return false;
    std::string text = MessageText(*s.episode);
    bool any = std::any_of(c.words.begin(), c.words.end(),
                           [&](const std::string& w) { return HasWholeWord(text, w); });
    if (!any) return false;
  }
  if (c.from_minute && c.until_minute) {
    if (!InWindow(s.local_minute_of_day, *c.from_minute, *c.until_minute)) return false;
  }
  if (c.weekdays != 0 && (c.weekdays & (1u << s.local_weekday)) == 0) return false;
  return true;
}

void SortForEvaluation(std::vector<Rule>& rules) {
  std::stable_sort(rules.begin(), rules.end(), [](const Rule& a, const Rule& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    int sa = Specificity(a), sb = Specificity(b);
    if (sa != sb) return sa > sb;
    if (a.origin != b.origin)
      return a.origin == RuleOrigin::kUser;  // a person's rule beats a learned one
    // Of two learned rules, one with a signal (the moment: a focus block) before one
    // without (the calendar: weekdays, hours), so that "hold during focus blocks" holds
    // even on the days another learned rule interrupts.
    if (a.origin == RuleOrigin::kLearned && a.when.signals.size() != b.when.signals.size()) {
      return a.when.signals.size() > b.when.signals.size();
    }
    return a.position < b.position;
  });
}

Result<RuleFile> ParseRuleFileOrThrow(std::string_view yaml);

Result<RuleFile> ParseRuleFile(std::string_view yaml) {
  if (!IsValidUtf8(yaml)) return Status::InvalidArgument("line 1: the file is not UTF-8 text");
  try {
    return ParseRuleFileOrThrow(yaml);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

Result<RuleFile> ParseRuleFileOrThrow(std::string_view yaml) {
  YAML::Node root = YAML::Load(std::string(yaml));
  RuleFile file;
  if (!root.IsMap()) return Status::InvalidArgument("line 1: expected a map with 'rules:'");
  CORTEX_RETURN_IF_ERROR(CheckKeys(root, {"rules", "settings"}, "the file"));
  if (root["settings"]) CORTEX_RETURN_IF_ERROR(ParseSettings(root["settings"], &file.settings));
  const YAML::Node rules = root["rules"];
  if (!rules) return Status::InvalidArgument("line 1: the file has no 'rules:' list");
  if (rules.IsNull()) return file;  // "rules:" with nothing under it: no rules
  if (!rules.IsSequence()) return FileError::At(rules, "'rules' must be a list");
  if (rules.size() > kMaxRules) {
    return FileError::At(rules, "a file holds at most " + std::to_string(kMaxRules) + " rules");
  }
  std::set<std::string> names;
  int position = 0;
  for (const YAML::Node& node : rules) {
    auto rule = ParseRule(node, position++);
    if (!rule.ok()) return rule.status();
    if (!names.insert(rule->name).second) {
      return FileError::At(node["name"], "duplicate rule name '" + rule->name + "'");
    }
    file.rules.push_back(std::move(*rule));
  }
  return file;
}

Result<ImportReport> ImportRules(Store& store, const Clock& clock, const std::string& ws_id,
                                 std::string_view yaml) {
  auto file = ParseRuleFile(yaml);
  if (!file.ok()) return file.status();
  ImportReport report;
  Status st = store.Write([&](WriteTx& tx) -> Status {
    report = ImportReport{};
    auto ws = tx.workspaces().Get(ws_id);
    if (!ws.ok()) return ws.status();
    auto current = tx.rules().List(ws_id, /*active_only=*/true);
    if (!current.ok()) return current.status();
    std::map<std::string, const Rule*> by_name;
    for (const Rule& r : *current) {
      if (r.origin == RuleOrigin::kUser) by_name[r.name] = &r;
    }
    TimePoint now = clock.Now();
    std::set<std::string> kept;
    for (Rule& r : file->rules) {
      // Evidence: episode ids as they are, anything else is an episode's external_id.
      std::vector<std::string> evidence;
      for (const std::string& ref : r.evidence) {
        if (ref.rfind("ep_", 0) == 0) {
          auto ep = tx.episodes().Get(ws_id, ref);
          if (!ep.ok()) {
            return Status::InvalidArgument("rule '" + r.name + "': evidence " + ref +
                                           " is not an episode of this workspace");
          }
          evidence.push_back(ref);
        } else {
          auto ep = tx.episodes().FindByExternalId(ws_id, ref);
          if (!ep.ok()) {
            return Status::InvalidArgument("rule '" + r.name + "': evidence '" + ref +
                                           "' names no episode (by id or external_id)");
          }
          evidence.push_back(ep->id);
        }
      }
      r.evidence = std::move(evidence);
      r.support = static_cast<int64_t>(r.evidence.size());
      auto it = by_name.find(r.name);
      if (it != by_name.end() && RuleDefinitionJson(*it->second) == RuleDefinitionJson(r) &&
          it->second->summary == r.summary && it->second->evidence == r.evidence) {
        kept.insert(it->second->id);
        ++report.unchanged;
        if (it->second->position != r.position) {
          CORTEX_RETURN_IF_ERROR(tx.rules().SetPosition(ws_id, it->second->id, r.position));
        }
        continue;
      }
      r.id = NewId("rul_", clock);
      r.workspace_id = ws_id;
      r.created_at = now;
      CORTEX_RETURN_IF_ERROR(tx.rules().Insert(r));
      ++report.added;
    }
    for (const auto& [name, rule] : by_name) {
      if (kept.count(rule->id)) continue;
      CORTEX_RETURN_IF_ERROR(tx.rules().Retire(ws_id, rule->id, now));
      ++report.retired;
    }
    auto settings = tx.workspaces().Settings(ws_id);
    if (!settings.ok()) return settings.status();
    report.settings_changed = SettingsToJson(*settings) != SettingsToJson(file->settings);
    if (report.settings_changed)
      CORTEX_RETURN_IF_ERROR(tx.workspaces().SetSettings(ws_id, file->settings));
    if (report.added || report.retired || report.settings_changed) {
      report.agent_version = NewIdAfter("av_", clock, ws->agent_version);
      CORTEX_RETURN_IF_ERROR(tx.workspaces().SetAgentVersion(ws_id, report.agent_version));
    } else {
      report.agent_version = ws->agent_version;
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return report;
}

}  // namespace cortex
