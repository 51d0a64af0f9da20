// The world model's rows, as the engines see them. Times are UTC instants.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/json_text.h"
#include "store/states.h"

namespace cortex {

struct Workspace {
  std::string id;             // ws_...
  std::string name;           // unique, chosen by the user
  std::string world_version;  // wv_...: moves whenever episodes or entities change
  std::string agent_version;  // av_...: moves whenever rules or trust change
  TimePoint created_at;
};

// Token scopes, as a bit set. `act` is an agent's (propose, draft, ingest); `approve` is a
// person's (approve, reject, move trust): an agent's read,act token never approves.
enum Scope : unsigned { kScopeRead = 1, kScopeAct = 2, kScopeAdmin = 4, kScopeApprove = 8 };

// Who is calling: the result of authenticating a token (engines/auth/tokens.h). Every engine
// call is scoped by `workspace_id`.
struct AuthContext {
  std::string workspace_id;
  std::string workspace_name;
  std::string token_id;  // empty for the unauthenticated test mode
  unsigned scopes = 0;
  bool Has(Scope s) const { return (scopes & s) != 0; }
};

struct TokenRecord {
  std::string id;  // tok_...
  std::string workspace_id;
  std::string hash;  // SHA-256 hex of the secret; the secret itself is never stored
  std::string label;
  unsigned scopes = 0;
  TimePoint created_at;
  std::optional<TimePoint> revoked_at;
  // Issued by the authorization server (docs/authorization.md): the OAuth client (cli_...)
  // it was issued to, when its current access token expires (each refresh moves it), and
  // the resource it is for. Empty and nullopt for a `ctk_` token of `cortex token create`.
  std::string client_id;
  std::optional<TimePoint> expires_at;
  std::string resource;
};

// An MCP session of the 2025-11-25 era (Mcp-Session-Id), kept in the store so that any
// instance can serve it.
struct McpSession {
  std::string id;  // 32 random hex digits
  std::string workspace_id;
  TimePoint created_at;
  TimePoint last_used;
  bool client_elicits = false;  // its client can ask its user by a form (elicitation)
  // The least severe log level its client asked for (logging/setLevel); empty: none asked,
  // no log notifications.
  std::string log_level;
};

// Tool calls counted in the current minute and local day, for a workspace (all its tokens)
// and for one of its tokens.
struct CallCounts {
  int64_t workspace_minute = 0, workspace_day = 0;
  int64_t token_minute = 0, token_day = 0;
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

// Every kind of episode there is: ingest accepts these, and queries over "any episode
// with this person" seek each one.
inline constexpr std::array<const char*, 4> kEpisodeKinds = {"message_received", "message_sent",
                                                             "calendar_block", "meeting"};

struct Episode {
  std::string id;  // ep_...
  std::string workspace_id;
  std::string kind;  // one of kEpisodeKinds
  TimePoint occurred_at;
  std::optional<TimePoint> ends_at;  // calendar blocks and meetings
  std::optional<std::string> entity_id;
  std::string channel;
  std::string subject;
  std::string summary;
  std::string body;
  std::string thread;
  std::optional<std::string> external_id;  // the source system's id; dedupes re-sent lines
  std::string world_version;               // the version this episode's batch created
  TimePoint created_at;
};

// A computed fact about a situation, e.g. {vip_counterparty, "Sender is in VIP watchlist."}.
struct Signal {
  SignalKind kind;
  std::string summary;
};

struct RuleConditions {
  std::vector<SignalKind> signals;          // all must be present
  std::vector<SignalKind> not_signals;      // none may be present
  std::vector<std::string> tags;            // the counterparty has at least one
  std::vector<std::string> counterparties;  // entity ids or normalised identifiers; any
  std::vector<std::string> channels;        // any
  std::vector<std::string> words;           // any, as whole words, case-insensitive
  std::optional<int> from_minute;           // time window [from, until) in local minutes
  std::optional<int> until_minute;          //   of the day; may wrap past midnight
  unsigned weekdays = 0;                    // bit 0 = Monday ... bit 6 = Sunday; 0 = any
};

struct RuleEffect {
  std::optional<TriageClass> triage_class;  // triage rules
  std::optional<int> max_level;             // action rules: cap the autonomy level (0-3)
  bool block = false;                       // action rules: refuse the action
  bool urgent = false;                      // action rules: mark the action urgent
};

struct Rule {
  std::string id;  // rul_...
  std::string workspace_id;
  std::string name;  // unique among a workspace's active rules
  RuleKind kind = RuleKind::kTriage;
  std::string action_class;  // action rules: the class they apply to ("communicate")
  std::string summary;       // one sentence a person can read
  RuleOrigin origin = RuleOrigin::kUser;
  RuleConditions when;
  RuleEffect then;
  int priority = 0;
  int position = 0;                   // order in its file
  std::vector<std::string> evidence;  // episode ids
  int64_t support = 0;                // evidence episodes
  int64_t contradictions = 0;         // episodes where it did not hold
  int64_t hits = 0;                   // times it decided something
  bool active = true;                 // status == kActive (kept in step with it)
  RuleStatus status = RuleStatus::kActive;
  TimePoint created_at;
  // Learned rules (docs/learning.md); empty for a person's rule.
  std::string pattern;  // what the learner found, e.g. "fast:entity_...:tue": one row per
                        // pattern is current (the newest)
  std::vector<std::string> contradiction_evidence;  // episode ids that went against it
  nlohmann::json backtest = nullptr;                // what it would have changed, last 30 days
  int64_t rejected_support = 0;                     // its support when a person rejected it
  std::string activated_version;                    // the agent_version its acceptance made
};

// The canonical JSON of a rule's definition (kind, class, conditions, effect, priority):
// equal definitions give equal JSON. Stored with the rule.
nlohmann::json RuleDefinitionJson(const Rule& rule);
// The spellings of `kinds`, in order (as rules store and show them).
std::vector<std::string> SignalNames(const std::vector<SignalKind>& kinds);
// Fills the definition fields of `rule` from RuleDefinitionJson's output.
void ApplyRuleDefinitionJson(const nlohmann::json& def, Rule* rule);

// Per-workspace settings that shape triage. Part of the agent's configuration.
struct WorkspaceSettings {
  int utc_offset_minutes = 0;      // the workspace's time zone, as a fixed offset
  int work_start_minute = 9 * 60;  // working hours [start, end), local
  int work_end_minute = 18 * 60;
  unsigned work_days = 0x1f;    // Monday-Friday
  int digest_minute = 17 * 60;  // when the daily digest goes out, local
  std::string digest_to;        // where it goes (an email address for smtp); empty: none sent
};

nlohmann::json SettingsToJson(const WorkspaceSettings& s);
WorkspaceSettings SettingsFromJson(const nlohmann::json& j);

struct Decision {
  std::string id;  // dec_...
  std::string workspace_id;
  DecisionClass decision_class = DecisionClass::kTriage;
  DecisionStatus status = DecisionStatus::kRecorded;  // DecisionClassMayHaveStatus
  TimePoint occurred_at;
  std::optional<std::string> entity_id;
  std::string payload_summary;
  std::optional<std::string> rule_id;
  std::optional<std::string> rule_summary;
  std::string confidence;
  std::string trace_id;
  std::string agent_version;
  std::string world_version;
  std::vector<std::string> source_episode_ids;
  // Class-specific (signals, class, ...): the text of a JSON object (DumpJson), stored as
  // is. Most reads never look inside it, and parsing it for every row was ~5% of a
  // decision.inspect.
  std::string details_json = "{}";
  // Parses details_json, on every call; throws std::runtime_error on bad text.
  nlohmann::json Details() const { return ParseStoredJson(details_json); }
  std::optional<std::string> notification_id;
  std::optional<std::string> triage_decision_id;
  std::optional<std::string> ledger_entry_id;
  // A triage decision's class (also in details, as "triage_class"); none for other
  // classes. A column of its own, in decisions_by_class (migration 18).
  std::optional<TriageClass> triage_class;
};

struct DecisionFilter {
  std::optional<DecisionClass> decision_class;
  std::optional<DecisionStatus> status;
  std::optional<TriageClass> triage_class;  // triage decisions of this class only
  std::optional<std::string> entity_id;
  std::optional<std::string> min_id;  // inclusive: decisions made at or after a time
  std::optional<std::string> max_id;  // exclusive: decisions made before a time, or a cursor
};

struct Notification {
  std::string id;  // ntf_...
  std::string workspace_id;
  std::string episode_id;
  std::string decision_id;
  std::optional<std::string> entity_id;
  TriageClass triage_class = TriageClass::kInterruptNow;
  std::optional<TimePoint> surface_at;  // none for handle_silently
  TimePoint created_at;
};

// One thing Cortex does or proposes to do (today: send a message).
struct Action {
  std::string id;  // act_...
  std::string workspace_id;
  std::string action_class;  // communicate
  std::string entity_id;
  std::string recipient;  // the address it goes to
  ActionStatus status = ActionStatus::kPending;
  int level = 1;  // the autonomy level it was decided at
  bool urgent = false;
  std::string message;  // as asked
  std::string tone;
  std::string context;
  std::string draft;                // the text to send (the drafter's, or a person's edit)
  std::string subject;              // as asked, or "Re: ..." of the message it answers; ""
                                    // means the draft's first line
  std::string in_reply_to;          // the episode id of the message it answers, or ""
  std::string decision_id;          // its action_proposed decision
  std::optional<TimePoint> due_at;  // pending: expiry (level 1) or execution (level 2)
  TimePoint created_at;
  TimePoint updated_at;
};

// One append-only row of the action ledger; see docs/ledger.md for the hash chain.
struct LedgerEntry {
  std::string id;  // led_...
  std::string workspace_id;
  int64_t seq = 0;  // 1, 2, 3... per workspace
  std::string action_id;
  std::string decision_id;
  LedgerEvent event = LedgerEvent::kProposed;
  TimePoint occurred_at;
  nlohmann::json provenance;  // rule summary, confidence, contributing episodes, versions
  nlohmann::json detail;      // event-specific: edited text, reason, error...
  std::string prev_hash;
  std::string hash;
};

struct TrustSetting {
  std::string action_class;
  std::string scope;  // default | tag:<tag> | entity:<entity id>
  std::optional<int> level;
  std::optional<int> ceiling;
  TimePoint updated_at;
};

struct TrustStreak {
  int64_t streak = 0;
  std::vector<std::string> evidence;  // decision ids of the approvals in the streak
};

// One row of the outbox: something to deliver at least once, `id` its idempotency key (the
// action id of a message, the decision id of a digest, the event id of an event).
struct OutboxItem {
  std::string id;
  OutboxKind kind = OutboxKind::kMessage;
  std::string workspace_id;
  std::string recipient;
  std::string body;
  OutboxStatus status = OutboxStatus::kPending;
  int attempts = 0;
  TimePoint next_attempt_at;
  std::string last_error;
  TimePoint created_at;
  // A message's mail fields, filled by the dispatcher from its action (not stored in the
  // outbox): what the SMTP connector writes into the headers and the message_sent episode
  // records.
  struct Mail {
    std::string subject;      // never empty for a message; free of control characters
    std::string in_reply_to;  // the answered message's Message-ID (no <>), or ""
    std::string references;   // Message-IDs (no <>), space-separated, oldest first
    std::string thread;       // the answered episode's thread, or ""
  } mail;
};

// A triage decision as action.communicate links a message to it (the rest of the row stays
// unread).
struct TriageLink {
  std::string decision_id;
  std::optional<std::string> rule_id;
  std::optional<std::string> rule_summary;
  std::string confidence;
  std::vector<std::string> source_episode_ids;
  std::optional<TriageClass> triage_class;  // from the decision's details
};

// What a decision's provenance shows of an episode it cites.
struct EpisodeSummary {
  std::string id;
  std::string summary;
  TimePoint occurred_at;
};

struct WorldCounts {
  int64_t entities = 0;
  int64_t episodes = 0;
  int64_t tokens_active = 0;
};

}  // namespace cortex
