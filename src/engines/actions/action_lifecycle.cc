// An action's life after its proposal (docs/actions.md): approved or rejected by the
// person, or moved on by the engine when its undo window passes or its draft expires. Each
// step moves the action, writes its ledger entry and the decision's status, and (for a
// send) queues the delivery, in one transaction.
#include <spdlog/spdlog.h>

#include "engines/actions/actions.h"  // the ActionEngine whose methods these are
#include "engines/actions/ledger.h"
#include "engines/actions/trust.h"
#include "store/actions.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/ledger.h"
#include "store/outbox.h"

namespace cortex {

using nlohmann::json;

namespace {

constexpr int kDueBatch = 100;

// Ledger and decision bookkeeping for `action` arriving in status `to`.
Status Record(WriteTx& tx, const Clock& clock, const Action& action, ActionStatus to,
              const json& provenance, const json& detail) {
  auto led = AppendLedgerEntry(tx, clock, action.workspace_id, action.id, action.decision_id,
                               LedgerEventOf(to), provenance, detail);
  if (!led.ok()) return led.status();
  return tx.decisions().SetStatus(action.workspace_id, action.decision_id, DecisionStatusOf(to));
}

// The provenance copied into every ledger entry of an action: what its proposal decided.
Result<json> ProvenanceOf(WriteTx& tx, const Action& action) {
  auto entries = tx.ledger().ListForAction(action.workspace_id, action.id);
  if (!entries.ok()) return entries.status();
  if (entries->empty()) return Status::Internal("action " + action.id + " has no ledger entry");
  return entries->front().provenance;
}

}  // namespace

Status EnqueueDelivery(WriteTx& tx, const Action& action, TimePoint now) {
  OutboxItem item;
  item.id = action.id;
  item.kind = OutboxKind::kMessage;
  item.workspace_id = action.workspace_id;
  item.recipient = action.recipient;
  item.body = action.draft;
  item.status = OutboxStatus::kPending;
  item.attempts = 0;
  item.next_attempt_at = now;
  item.created_at = now;
  return tx.outbox().Insert(item);
}

Result<ActionResult> ActionEngine::Approve(const std::string& ws, const std::string& decision_id,
                                           const std::optional<std::string>& edited_text,
                                           const Actor& by) {
  return EndPending(ws, decision_id, /*approve=*/true, edited_text, by);
}

Result<ActionResult> ActionEngine::Reject(const std::string& ws, const std::string& decision_id,
                                          const std::optional<std::string>& reason,
                                          const Actor& by) {
  return EndPending(ws, decision_id, /*approve=*/false, reason, by);
}

Result<ActionResult> ActionEngine::EndPending(const std::string& ws, const std::string& decision_id,
                                              bool approve, const std::optional<std::string>& text,
                                              const Actor& by) {
  ActionResult result;
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    TimePoint now = clock_.Now();
    auto action = tx.actions().FindByDecision(ws, decision_id);
    if (!action.ok()) {
      if (action.status().code() != Code::kNotFound) return action.status();
      auto d = tx.decisions().Get(ws, decision_id);
      if (d.ok()) {
        return Status::Conflict("decision " + decision_id + " is a " +
                                std::string(Name(d->decision_class)) +
                                " decision, not a proposed action");
      }
      return Status::NotFound("no decision " + decision_id + " in this workspace");
    }
    if (action->status != ActionStatus::kPending) {
      return Status::Conflict(
          "decision " + decision_id + " is " + std::string(Name(action->status)) +
          ", not pending: it can no longer be " + (approve ? "approved" : "rejected"));
    }
    auto provenance = ProvenanceOf(tx, *action);
    if (!provenance.ok()) return provenance.status();
    auto who = tx.entities().Get(ws, action->entity_id);
    if (!who.ok()) return who.status();

    if (!approve) {
      CORTEX_RETURN_IF_ERROR(tx.actions().Transition(ws, action->id, ActionStatus::kPending,
                                                     ActionStatus::kRejected, std::nullopt, now));
      json detail = json::object();
      if (text) detail["reason"] = *text;
      detail["by"] = by.Json();
      CORTEX_RETURN_IF_ERROR(
          Record(tx, clock_, *action, ActionStatus::kRejected, *provenance, detail));
      auto moved = RecordRejection(tx, clock_, ws, action->action_class, *who, decision_id,
                                   config_.trust, by);
      if (!moved.ok()) return moved.status();
      result = ActionResultOf(ActionOutcome::kSuccess, *action, "Rejected: nothing will be sent.");
      if (*moved) result.message += " " + (*moved)->payload_summary;
      return Status::Ok();
    }

    bool edited = text.has_value() && *text != action->draft;
    std::optional<std::string> new_draft;
    if (edited) new_draft = *text;
    CORTEX_RETURN_IF_ERROR(tx.actions().Transition(ws, action->id, ActionStatus::kPending,
                                                   ActionStatus::kExecuted, new_draft, now));
    json detail = {{"edited", edited}, {"by", by.Json()}};
    if (edited) {
      detail["draft_before"] = action->draft;
      detail["draft"] = *text;
      action->draft = *text;
    }
    auto led = AppendLedgerEntry(tx, clock_, ws, action->id, decision_id, LedgerEvent::kApproved,
                                 *provenance, detail);
    if (!led.ok()) return led.status();
    CORTEX_RETURN_IF_ERROR(Record(tx, clock_, *action, ActionStatus::kExecuted, *provenance,
                                  {{"by", by.Json()}, {"because", "approved"}}));
    CORTEX_RETURN_IF_ERROR(EnqueueDelivery(tx, *action, now));
    auto moved = RecordApproval(tx, clock_, ws, action->action_class, *who, decision_id, edited,
                                config_.trust);
    if (!moved.ok()) return moved.status();
    result = ActionResultOf(ActionOutcome::kSuccess, *action,
                            std::string("Approved") + (edited ? " with your edits" : "") +
                                ": sending to " + action->recipient + ".");
    if (*moved) result.message += " " + (*moved)->payload_summary;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return result;
}

Result<int> ActionEngine::ProcessDue(TimePoint now) {
  std::vector<Action> due;
  Status st = store_.Read([&](ReadTx& tx) {
    auto list = tx.actions().Due(now, kDueBatch);
    if (!list.ok()) return list.status();
    due = std::move(*list);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  int handled = 0;
  for (const Action& a : due) {
    // Level 2: the undo window passed; level 1: the draft expired.
    ActionStatus to = a.level == 2 ? ActionStatus::kExecuted : ActionStatus::kExpired;
    Status one = store_.Write([&](WriteTx& tx) -> Status {
      Status moved = tx.actions().Transition(a.workspace_id, a.id, ActionStatus::kPending, to,
                                             std::nullopt, now);
      if (moved.code() == Code::kConflict) return Status::Ok();  // approved/rejected meanwhile
      CORTEX_RETURN_IF_ERROR(moved);
      auto provenance = ProvenanceOf(tx, a);
      if (!provenance.ok()) return provenance.status();
      if (to == ActionStatus::kExecuted) {
        CORTEX_RETURN_IF_ERROR(Record(tx, clock_, a, to, *provenance,
                                      {{"by", Actor::Engine().Json()},
                                       {"because", "the undo window passed without a rejection"}}));
        CORTEX_RETURN_IF_ERROR(EnqueueDelivery(tx, a, now));
      } else {
        CORTEX_RETURN_IF_ERROR(Record(
            tx, clock_, a, to, *provenance,
            {{"by", Actor::Engine().Json()}, {"because", "not approved before it expired"}}));
      }
      ++handled;
      return Status::Ok();
    });
    if (!one.ok()) {
      // Keep going: one action that cannot be handled must not hold up the rest.
      spdlog::warn("due action {}: {}", a.id, one.message());
    }
  }
  return handled;
}

}  // namespace cortex
