// The world model's rows, as the engines see them. Times are UTC instants.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"

namespace cortex {

struct Workspace {
  std::string id;    // ws_...
  std::string name;  // unique, chosen by the user
  std::string world_version;  // wv_...: moves whenever episodes or entities change
  std::string agent_version;  // av_...: moves whenever rules or trust change
  TimePoint created_at;
};

// Token scopes, as a bit set.
enum Scope : unsigned { kScopeRead = 1, kScopeAct = 2, kScopeAdmin = 4 };

struct TokenRecord {
  std::string id;  // tok_...
  std::string workspace_id;
  std::string hash;  // SHA-256 hex of the secret; the secret itself is never stored
  std::string label;
  unsigned scopes = 0;
  TimePoint created_at;
  std::optional<TimePoint> revoked_at;
};

struct Entity {
  std::string id;  // entity_...
  std::string workspace_id;
  std::string kind;  // person | organization
  std::string name;
  std::vector<std::string> identifiers;  // normalised: emails and @handles lowercased
  std::vector<std::string> tags;
  TimePoint created_at;
};

struct Episode {
  std::string id;  // ep_...
  std::string workspace_id;
  std::string kind;  // message_received | message_sent | calendar_block | meeting
  TimePoint occurred_at;
  std::optional<TimePoint> ends_at;  // calendar blocks and meetings
  std::optional<std::string> entity_id;
  std::string channel;
  std::string subject;
  std::string summary;
  std::string body;
  std::string thread;
  std::optional<std::string> external_id;  // the source system's id; dedupes re-sent lines
  std::string world_version;  // the version this episode's batch created
  TimePoint created_at;
};

struct WorldCounts {
  int64_t entities = 0;
  int64_t episodes = 0;
  int64_t tokens_active = 0;
};

}  // namespace cortex
