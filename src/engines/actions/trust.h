// Trust: the autonomy level (0 off, 1 draft, 2 supervised, 3 autonomous) for an action class
// and a counterparty. Set by people (`cortex trust set`) and earned: approvals without
// edits raise it, rejections lower it. Every move is a `trust_transition` decision.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "engines/actions/actor.h"
#include "store/store.h"

namespace cortex {

struct TrustConfig {
  int default_level = 1;       // every class and counterparty starts here
  int approvals_to_raise = 3;  // consecutive approvals without edits that raise the level
};

const char* LevelName(int level);  // off, draft, supervised, autonomous

struct EffectiveTrust {
  int level = 1;
  std::string source;          // "entity", "tag:<tag>", "default" or "built-in default"
  std::optional<int> ceiling;  // the lowest ceiling among the counterparty's tags
  bool capped = false;         // the ceiling lowered the level
};

// The level for (class x counterparty) under the workspace's trust `settings`: the
// counterparty's own setting, else the lowest of its tags' settings, else the class
// default; never above its tags' ceiling.
EffectiveTrust ResolveTrust(const std::vector<TrustSetting>& settings, const std::string& cls,
                            const Entity& who, const TrustConfig& config);
// ResolveTrust on the settings stored for `ws`.
Result<EffectiveTrust> LookupTrust(ReadTx& tx, const std::string& ws, const std::string& cls,
                                   const Entity& who, const TrustConfig& config);

// Records a person's approval. Without edits it extends the streak, and a full streak raises
// the level by one, up to the tags' ceiling and any rule that holds the counterparty lower
// (StandingRuleCap): the returned trust_transition decision, if any, made by the engine with
// the approvals (which name their people) as evidence.
Result<std::optional<Decision>> RecordApproval(WriteTx& tx, const Clock& clock,
                                               const std::string& ws, const std::string& cls,
                                               const Entity& who, const std::string& decision_id,
                                               bool edited, const TrustConfig& config);

// Records a person's rejection: the streak resets and the level drops by one, never below 1:
// only a person turns a counterparty off.
Result<std::optional<Decision>> RecordRejection(WriteTx& tx, const Clock& clock,
                                                const std::string& ws, const std::string& cls,
                                                const Entity& who, const std::string& decision_id,
                                                const TrustConfig& config, const Actor& actor);

// A person sets `level` and/or `ceiling` (tags only) for (class x scope), scope being the
// stored form ResolveTrustScope returns. Moves the agent version and records a
// trust_transition decision naming `actor`, which it returns. InvalidArgument for a level
// outside 0-3, a ceiling on a scope other than a tag, or neither given.
Result<Decision> SetTrustByPerson(WriteTx& tx, const Clock& clock, const std::string& ws,
                                  const std::string& cls, const std::string& scope,
                                  std::optional<int> level, std::optional<int> ceiling,
                                  const TrustConfig& config, const Actor& actor);

// Validates a scope given on the command line: "default", "tag:<tag>" or an entity
// reference (id, email, @handle), returned as the stored scope string.
Result<std::string> ResolveTrustScope(ReadTx& tx, const std::string& ws, const std::string& raw);

}  // namespace cortex
