// Rules: conditions over a situation (signals, the counterparty, the message) and an effect.
// Triage rules pick a triage class; action rules cap the autonomy level, block an action or
// mark it urgent. The file format and the evaluation order are in docs/rules.md.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "store/model.h"
#include "store/store.h"

namespace cortex {

// What a rule's conditions are checked against.
struct Situation {
  const Episode* episode = nullptr;  // the message (triage) or the draft (action)
  const Entity* counterparty = nullptr;
  std::vector<Signal> signals;
  int local_minute_of_day = 0;  // in the workspace's time zone
  int local_weekday = 0;        // 0 = Monday ... 6 = Sunday
};

// Confidence thresholds: a rule's label comes from its support (evidence episodes) and how
// often it held (support / (support + contradictions)).
struct ConfidenceThresholds {
  int strong_min_support = 8;
  double strong_min_ratio = 0.9;
  int pretty_min_support = 3;
  double pretty_min_ratio = 0.75;
};

// "strong_pattern", "pretty_sure" or "just_guessing".
std::string ConfidenceLabel(const Rule& rule, const ConfidenceThresholds& t);

// True iff every condition of `rule` holds in `s`.
bool RuleMatches(const Rule& rule, const Situation& s);

// Sorts rules into evaluation order: priority (high first), then specificity (more
// conditions first), then a person's rule before a learned one (of two learned ones, the
// one with more signals first), then their position in the file.
void SortForEvaluation(std::vector<Rule>& rules);

// The result of parsing a rules file: rules (without ids) and the workspace settings.
struct RuleFile {
  std::vector<Rule> rules;
  WorkspaceSettings settings;
};

// Parses a rules file (YAML). Errors say "line N: reason". Evidence given as external ids
// is left for ImportRules to resolve.
Result<RuleFile> ParseRuleFile(std::string_view yaml);

struct ImportReport {
  size_t added = 0;
  size_t unchanged = 0;
  size_t retired = 0;
  bool settings_changed = false;
  std::string agent_version;  // after the import
};

// Makes the file's rules the workspace's active user rules (learned rules are untouched):
// a rule whose name and definition are unchanged keeps its id and counts; a changed one is
// retired and re-added under a new id; rules missing from the file are retired. Evidence
// given as an episode's external_id is resolved to its id. Moves agent_version iff anything
// changed. All or nothing.
Result<ImportReport> ImportRules(Store& store, const Clock& clock, const std::string& ws_id,
                                 std::string_view yaml);

}  // namespace cortex
