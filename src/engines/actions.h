// The action engine: every send goes through it. Communicate resolves the recipient,
// drafts, looks up trust, fires action rules and decides by the resulting level; approve
// and reject end a pending action; ProcessDue expires drafts and executes supervised
// actions whose undo window passed. Decisions, ledger entries and the outbox row of one
// step are written in one transaction, before the caller hears back.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "connectors/model_drafter.h"
#include "core/clock.h"
#include "core/status.h"
#include "engines/quotas.h"
#include "engines/trust.h"
#include "store/store.h"

namespace cortex {

struct ActionConfig {
  std::chrono::seconds draft_expiry{24 * 3600};  // level 1: pending until approved or this
  std::chrono::seconds undo_window{600};         // level 2: executed after this unless rejected
  TrustConfig trust;
  DrafterConfig drafter;
  QuotaLimits quotas;  // defaults; inference units are spent by the model drafter
};

// The seeds' McpActionResult: success | pending_approval | error.
struct ActionResult {
  std::string status;
  std::string decision_id;
  std::string action_id;
  std::string message;
  std::string error;      // status "error" only: a tool error code
  std::string quota;      // quota_exceeded only: which quota
  int retry_after_s = 0;  // quota_exceeded only
};

struct CommunicateRequest {
  std::string to;  // entity id, email, @handle or +phone
  std::string message;
  std::string tone;
  std::string context;
  std::string token_id;  // who asks: model calls count against this token's budget
};

class ActionEngine {
 public:
  ActionEngine(Store& store, const Clock& clock, const ActionConfig& config);

  // InvalidArgument (naming the field) for a bad `to` or tone. A refusal by trust is not a
  // Status error: it is an ActionResult with error trust_insufficient and a decision id.
  Result<ActionResult> Communicate(const std::string& ws, const CommunicateRequest& req);
  // Executes a pending action, with `edited_text` replacing the draft if given.
  Result<ActionResult> Approve(const std::string& ws, const std::string& decision_id,
                               const std::optional<std::string>& edited_text);
  Result<ActionResult> Reject(const std::string& ws, const std::string& decision_id,
                              const std::optional<std::string>& reason);

  // Handles every pending action due at or before `now` (all workspaces): level-1 drafts
  // expire, level-2 actions execute. Returns how many it handled.
  Result<int> ProcessDue(TimePoint now);

 private:
  // Spends one inference unit of today's budget. An ActionResult with status "error"
  // (quota_exceeded) when the budget is spent; an empty one otherwise.
  Result<ActionResult> SpendInference(const std::string& ws, const std::string& token_id);
  Result<ActionResult> EndPending(const std::string& ws, const std::string& decision_id,
                                  bool approve, const std::optional<std::string>& text);

  Store& store_;
  const Clock& clock_;
  const ActionConfig& config_;
};

// Queues `action` for delivery inside `tx` (the transactional outbox).
Status EnqueueDelivery(WriteTx& tx, const Action& action, TimePoint now);

}  // namespace cortex
