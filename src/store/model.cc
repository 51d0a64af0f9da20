#include "store/model.h"

namespace cortex {

using nlohmann::json;

std::vector<std::string> SignalNames(const std::vector<SignalKind>& kinds) {
  std::vector<std::string> out;
  out.reserve(kinds.size());
  for (SignalKind k : kinds) out.emplace_back(Name(k));
  return out;
}

json RuleDefinitionJson(const Rule& r) {
  json when = json::object();
  auto list = [&](const char* key, const std::vector<std::string>& v) {
    if (!v.empty()) when[key] = v;
  };
  list("signals", SignalNames(r.when.signals));
  list("not_signals", SignalNames(r.when.not_signals));
  list("tags", r.when.tags);
  list("counterparties", r.when.counterparties);
  list("channels", r.when.channels);
  list("words", r.when.words);
  if (r.when.from_minute) when["from_minute"] = *r.when.from_minute;
  if (r.when.until_minute) when["until_minute"] = *r.when.until_minute;
  if (r.when.weekdays != 0) when["weekdays"] = r.when.weekdays;
  json then = json::object();
  if (r.then.triage_class) then["triage"] = Name(*r.then.triage_class);
  if (r.then.max_level) then["max_level"] = *r.then.max_level;
  if (r.then.block) then["block"] = true;
  if (r.then.urgent) then["urgent"] = true;
  json def = {{"kind", Name(r.kind)}, {"when", when}, {"then", then}, {"priority", r.priority}};
  if (!r.action_class.empty()) def["action_class"] = r.action_class;
  return def;
}

void ApplyRuleDefinitionJson(const json& def, Rule* r) {
  r->kind = ParseStored<RuleKind>(def.value("kind", ""));
  r->action_class = def.value("action_class", "");
  r->priority = def.value("priority", 0);
  const json& when = def.at("when");
  auto list = [&](const char* key) {
    return when.contains(key) ? when[key].get<std::vector<std::string>>()
                              : std::vector<std::string>{};
  };
  auto signals = [&](const char* key) {
    std::vector<SignalKind> out;
    for (const std::string& name : list(key)) out.push_back(ParseStored<SignalKind>(name));
    return out;
  };
  r->when.signals = signals("signals");
  r->when.not_signals = signals("not_signals");
  r->when.tags = list("tags");
  r->when.counterparties = list("counterparties");
  r->when.channels = list("channels");
  r->when.words = list("words");
  r->when.from_minute =
      when.contains("from_minute") ? std::optional<int>(when["from_minute"]) : std::nullopt;
  r->when.until_minute =
      when.contains("until_minute") ? std::optional<int>(when["until_minute"]) : std::nullopt;
  r->when.weekdays = when.value("weekdays", 0u);
  const json& then = def.at("then");
  r->then.triage_class =
      then.contains("triage")
          ? std::optional(ParseStored<TriageClass>(then["triage"].get<std::string>()))
          : std::nullopt;
  r->then.max_level =
      then.contains("max_level") ? std::optional<int>(then["max_level"]) : std::nullopt;
  r->then.block = then.value("block", false);
  r->then.urgent = then.value("urgent", false);
}

json SettingsToJson(const WorkspaceSettings& s) {
  return {{"utc_offset_minutes", s.utc_offset_minutes}, {"work_start_minute", s.work_start_minute},
          {"work_end_minute", s.work_end_minute},       {"work_days", s.work_days},
          {"digest_minute", s.digest_minute},           {"digest_to", s.digest_to}};
}

WorkspaceSettings SettingsFromJson(const json& j) {
  WorkspaceSettings s;
  if (!j.is_object()) return s;
  s.utc_offset_minutes = j.value("utc_offset_minutes", s.utc_offset_minutes);
  s.work_start_minute = j.value("work_start_minute", s.work_start_minute);
  s.work_end_minute = j.value("work_end_minute", s.work_end_minute);
  s.work_days = j.value("work_days", s.work_days);
  s.digest_minute = j.value("digest_minute", s.digest_minute);
  s.digest_to = j.value("digest_to", s.digest_to);
  return s;
}

}  // namespace cortex
