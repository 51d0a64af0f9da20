// The action engine: every send goes through it. Communicate runs in steps: resolve the
// recipient once, draft, read the facts, decide (DecideAction, engines/actions/action_policy.h: a
// pure function of those facts), explain, record. Approve and reject end a pending action;
// ProcessDue expires drafts and executes supervised actions whose undo window passed. An
// action's status moves only as store/states.h's kActionMoves allows. Decisions, ledger
// entries and the outbox row of one step are written in one transaction, before the caller
// hears back.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "connectors/model_drafter.h"
#include "core/clock.h"
#include "core/status.h"
#include "engines/actions/action_policy.h"
#include "engines/actions/trust.h"
#include "engines/auth/quotas.h"
#include "store/store.h"

namespace cortex {

struct ActionConfig {
  std::chrono::seconds draft_expiry{24 * 3600};  // level 1: pending until approved or this
  std::chrono::seconds undo_window{600};         // level 2: executed after this unless rejected
  TrustConfig trust;
  // Level 1 drafts may be put to the person inside their own MCP client (elicitation;
  // engines/actions/elicitation.h). [actions] approve_in_client = false turns it off.
  bool approve_in_client = true;
  DrafterConfig drafter;
  QuotaLimits quotas;  // defaults; inference units are spent by the model drafter
};

// The seeds' McpActionResult: success | pending_approval | error.
struct ActionResult {
  ActionOutcome outcome = ActionOutcome::kSuccess;
  std::string decision_id;
  std::string action_id;
  std::string message;
  std::string draft;      // the text that is (or would be) sent, when there is an action
  int level = -1;         // the trust level it was decided at, when there is an action
  std::string error;      // kError only: a tool error code
  std::string quota;      // quota_exceeded only: which quota
  int retry_after_s = 0;  // quota_exceeded only
};

// The result `outcome` of `a`, with `message`: its ids, draft and level filled in.
ActionResult ActionResultOf(ActionOutcome outcome, const Action& a, std::string message);

// An ActionResult as JSON text and back, for what keeps one (idempotency keys,
// elicitations). Parsing throws std::runtime_error on text not written by the first.
std::string ActionResultJson(const ActionResult& r);
ActionResult ActionResultFromJson(const std::string& text);

struct CommunicateRequest {
  std::string to;  // entity id, email, @handle or +phone
  std::string message;
  std::string tone;
  std::string context;
  std::string token_id;         // who asks: model calls count against this token's budget
  std::string idempotency_key;  // optional: a retry with it gets the first call's result
  std::string subject;          // optional: the mail's subject (else "Re: ..." or the
                                // draft's first line)
  std::string in_reply_to;      // optional: the episode id of the message this answers
};

class ActionEngine {
 public:
  ActionEngine(Store& store, const Clock& clock, const ActionConfig& config);

  // InvalidArgument (naming the field) for a bad `to` or tone, or an idempotency key used
  // with other arguments. A refusal by trust is not a Status error: it is an ActionResult
  // with error trust_insufficient and a decision id. A call whose key was used before gets
  // that call's result, and nothing else happens (engines/actions/idempotency.h).
  Result<ActionResult> Communicate(const std::string& ws, const CommunicateRequest& req);
  // A person (`by`) executes a pending action, with `edited_text` replacing the draft if
  // given. Conflict if it is no longer pending.
  Result<ActionResult> Approve(const std::string& ws, const std::string& decision_id,
                               const std::optional<std::string>& edited_text, const Actor& by);
  // A person (`by`) ends a pending action.
  Result<ActionResult> Reject(const std::string& ws, const std::string& decision_id,
                              const std::optional<std::string>& reason, const Actor& by);

  // Handles every pending action due at or before `now` (all workspaces): level-1 drafts
  // expire, level-2 actions execute. Returns how many it handled.
  Result<int> ProcessDue(TimePoint now);

 private:
  // Spends one inference unit of today's budget: nothing when it could, the caller's
  // quota_exceeded result when the budget is spent.
  Result<std::optional<ActionResult>> SpendInference(const std::string& ws,
                                                     const std::string& token_id);
  // The first result of `req`'s idempotency key, if one was recorded (idempotency.h).
  Result<std::optional<ActionResult>> ReadReplay(const std::string& ws,
                                                 const CommunicateRequest& req);
  // The model drafter's answer, drafted before Communicate's transaction.
  struct ModelDraft {
    std::optional<std::string> text;                 // none: the built-in drafter's draft is sent
    nlohmann::json note = {{"drafter", "builtin"}};  // who drafted it (the decision's details)
  };
  // Checks the recipient and tone (a bad one costs nothing), spends one unit of today's
  // inference budget and asks the model, outside any transaction (never hold the write lock
  // across a network call). The caller's quota_exceeded result when the budget is spent.
  Result<std::optional<ActionResult>> DraftByModel(const std::string& ws,
                                                   const CommunicateRequest& req, ModelDraft* out);
  Result<ActionResult> EndPending(const std::string& ws, const std::string& decision_id,
                                  bool approve, const std::optional<std::string>& text,
                                  const Actor& by);

  // What Communicate knows of one proposal as its steps fill it in.
  struct Proposal {
    std::string ws, agent_version, world_version;
    TimePoint now;
    Entity who;
    bool first_contact = false;  // `who` was created for this message
    std::string draft;
    std::string subject;  // checked; "" means the draft's first line
    std::vector<Signal> signals;
    ActionVerdict verdict;
    std::optional<TriageLink> triage;  // the notification this answers, if any
    // The explanation: the rule (or triage, or trust) it rests on, and its evidence.
    std::optional<std::string> rule_id;
    std::string rule_summary, confidence;
    nlohmann::json contributing;          // [{id, summary, occurred_at}]
    std::vector<std::string> source_ids;  // their ids
  };
  // What the decision rests on, read in the proposal's transaction.
  struct Facts {
    std::vector<TrustSetting> trust;
    WorkspaceSettings settings;
    Episode outgoing;  // the message as action rules see it
    std::vector<Signal> signals;
    std::vector<Rule> rules;  // active action rules of the class, in evaluation order
  };
  Result<Facts> ReadFacts(ReadTx& tx, const Proposal& p, const std::string& message);
  // Communicate's steps 1 to 4 in its transaction, at `now`: the recipient (an address never
  // seen becomes a new entity), subject, draft (`model_draft` if given), the facts and the
  // verdict (which points into `facts`), and why.
  Status Propose(WriteTx& tx, const std::string& ws, TimePoint now, const CommunicateRequest& req,
                 const std::optional<std::string>& model_draft, Proposal* p, Facts* facts);
  // Why the proposal went out at its level: trust, its basis, a ceiling or rule that capped it.
  static std::string LevelReason(const Proposal& p);
  // Fills p's explanation from its verdict and triage link.
  Status Explain(ReadTx& tx, Proposal& p);
  // Communicate's step 5: the decisions, the action, its ledger entries and, when it
  // executes, the outbox row; a draft's approval request is pushed.
  Result<Action> RecordProposal(WriteTx& tx, const Proposal& p, const CommunicateRequest& req,
                                const nlohmann::json& drafter_note);
  // The action `p` proposes, due when its level says (not stored; no decision id yet).
  Action NewAction(const Proposal& p, const CommunicateRequest& req) const;
  // Stores a rule_fired decision for each rule that fired on the proposal (and counts its
  // hit); returns their ids.
  Result<nlohmann::json> RecordFiredRules(WriteTx& tx, const Proposal& p, const std::string& trace,
                                          const std::string& action_id);
  // The action_proposed decision of `action` (not stored), its details naming `fired_ids`.
  Decision ProposalDecision(const Proposal& p, const Action& action, const std::string& trace,
                            nlohmann::json fired_ids, const nlohmann::json& drafter_note,
                            const std::string& level_reason) const;
  // The ledger's proposed (or refused) entry `ledger_id` of `action`; when it executes, its
  // executed entry and the outbox row.
  Status RecordInLedger(WriteTx& tx, const Proposal& p, const Action& action,
                        const std::string& level_reason, const std::string& ledger_id);
  // Pushes the approval request of a level 1 draft.
  Status RequestApproval(WriteTx& tx, const Proposal& p, const Action& action,
                         const std::string& level_reason);
  ActionResult Outcome(const Proposal& p, const Action& action) const;

  Store& store_;
  const Clock& clock_;
  const ActionConfig& config_;
};

// Queues `action` for delivery inside `tx` (the transactional outbox).
Status EnqueueDelivery(WriteTx& tx, const Action& action, TimePoint now);

}  // namespace cortex
