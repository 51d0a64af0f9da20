// The states and kinds the model stores as text, as enums: each has one table of spellings
// (how it is stored and how it reads on the wire), and an action's legal moves are written
// once, here, for the engine, the store and docs/actions.md alike.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace cortex {

// An action's state. Its life: docs/actions.md, and kActionMoves below.
enum class ActionStatus { kPending, kExecuted, kDelivered, kFailed, kRejected, kExpired, kRefused };

// One row of the action ledger records one of these.
enum class LedgerEvent {
  kProposed,
  kApproved,
  kRejected,
  kExpired,
  kExecuted,
  kDelivered,
  kFailed,
  kRefused
};

// `digest`: the daily digest a workspace was sent (or is being sent), one per local day.
// `rule_proposed` / `rule_retired`: the learner proposed a rule, or retired one (docs/learning.md).
enum class DecisionClass {
  kTriage,
  kActionProposed,
  kRuleFired,
  kTrustTransition,
  kDigest,
  kRuleProposed,
  kRuleRetired
};

// A proposal (action_proposed) follows its action's status, a digest its delivery's
// (pending, delivered, failed); every other decision is `recorded` and stays so. (`approved` is
// never stored: an approved action is executed at once. It stays a status decision.list accepts, as
// it always has.)
enum class DecisionStatus {
  kRecorded,
  kPending,
  kApproved,
  kRejected,
  kExpired,
  kExecuted,
  kDelivered,
  kFailed,
  kRefused
};

enum class TriageClass { kInterruptNow, kSurfaceAtTransition, kDailyDigest, kHandleSilently };

enum class RuleKind { kTriage, kAction };
enum class RuleOrigin { kUser, kLearned };
// A rule's life: a person's rule is active until retired; a learned rule starts proposed and
// a person accepts it (active) or rejects it; the learner retires it when its evidence fades.
enum class RuleStatus { kProposed, kActive, kRetired, kRejected };

enum class OutboxStatus { kPending, kDelivered, kFailed };

// What an outbox row carries: an action's message to a counterparty, a workspace's daily
// digest to its person, or an event pushed to the person's webhook (engines/delivery/pushes.h).
enum class OutboxKind { kMessage, kDigest, kEvent };

// A fact about a message that triage computes (engines/triage/signals.cc), rules test
// (`when.signals`, docs/rules.md), the learner proposes rules on and explanations show, each
// with its sentence of evidence. This is the one list of them.
enum class SignalKind {
  kVipCounterparty,
  kActiveFocusBlock,
  kFirstContact,
  kAwaitingYourReply,
  kUrgentLanguage,
  kAfterHours,
  kThreadActive
};

// A task's state (the io.modelcontextprotocol/tasks extension; engines/tasks/). Its life is
// kTaskMoves below; completed, failed and cancelled are final.
enum class TaskStatus { kWorking, kInputRequired, kCompleted, kFailed, kCancelled };

// What an acting tool's call came to (the seeds' McpActionResult `status`): done, a draft
// waiting for a person, or an outcome that is an error to the caller yet recorded as a
// decision or answer (trust refused it, a rule blocked it, a quota stopped it, the approved
// delivery failed). The engine's own failures never are one: they are a Status.
enum class ActionOutcome { kSuccess, kPendingApproval, kError };

// The spellings of each enum, in the order of its values.
template <typename E>
struct Spellings;
template <>
struct Spellings<ActionStatus> {
  static constexpr std::array<std::string_view, 7> kNames = {
      "pending", "executed", "delivered", "failed", "rejected", "expired", "refused"};
};
template <>
struct Spellings<LedgerEvent> {
  static constexpr std::array<std::string_view, 8> kNames = {
      "proposed", "approved", "rejected", "expired", "executed", "delivered", "failed", "refused"};
};
template <>
struct Spellings<DecisionClass> {
  static constexpr std::array<std::string_view, 7> kNames = {
      "triage", "action_proposed", "rule_fired",  "trust_transition",
      "digest", "rule_proposed",   "rule_retired"};
};
template <>
struct Spellings<DecisionStatus> {
  static constexpr std::array<std::string_view, 9> kNames = {"recorded",  "pending", "approved",
                                                             "rejected",  "expired", "executed",
                                                             "delivered", "failed",  "refused"};
};
template <>
struct Spellings<TriageClass> {
  static constexpr std::array<std::string_view, 4> kNames = {
      "interrupt_now", "surface_at_transition", "daily_digest", "handle_silently"};
};
template <>
struct Spellings<RuleKind> {
  static constexpr std::array<std::string_view, 2> kNames = {"triage", "action"};
};
template <>
struct Spellings<RuleOrigin> {
  static constexpr std::array<std::string_view, 2> kNames = {"user", "learned"};
};
template <>
struct Spellings<RuleStatus> {
  static constexpr std::array<std::string_view, 4> kNames = {"proposed", "active", "retired",
                                                             "rejected"};
};
template <>
struct Spellings<OutboxStatus> {
  static constexpr std::array<std::string_view, 3> kNames = {"pending", "delivered", "failed"};
};
template <>
struct Spellings<OutboxKind> {
  static constexpr std::array<std::string_view, 3> kNames = {"message", "digest", "event"};
};

template <>
struct Spellings<SignalKind> {
  static constexpr std::array<std::string_view, 7> kNames = {
      "vip_counterparty", "active_focus_block", "first_contact", "awaiting_your_reply",
      "urgent_language",  "after_hours",        "thread_active"};
};

template <>
struct Spellings<TaskStatus> {
  static constexpr std::array<std::string_view, 5> kNames = {"working", "input_required",
                                                             "completed", "failed", "cancelled"};
};

template <>
struct Spellings<ActionOutcome> {
  static constexpr std::array<std::string_view, 3> kNames = {"success", "pending_approval",
                                                             "error"};
};

template <typename E>
concept State = requires {
  Spellings<E>::kNames;
};

// How `e` is stored and reads on the wire. The text lives as long as the program.
template <State E>
constexpr std::string_view Name(E e) {
  return Spellings<E>::kNames[static_cast<size_t>(e)];
}

// Every value of `E`, in order.
template <State E>
constexpr auto AllOf() {
  std::array<E, Spellings<E>::kNames.size()> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<E>(i);
  return out;
}

// The value spelled `text`, if any.
template <State E>
constexpr std::optional<E> Parse(std::string_view text) {
  for (size_t i = 0; i < Spellings<E>::kNames.size(); ++i) {
    if (Spellings<E>::kNames[i] == text) return static_cast<E>(i);
  }
  return std::nullopt;
}

// The value a stored row spells; throws std::runtime_error on a spelling no value has (a
// row not written by Cortex), as a stored JSON text that does not parse does.
template <State E>
E ParseStored(std::string_view text) {
  if (auto e = Parse<E>(text)) return *e;
  throw std::runtime_error("unknown stored state '" + std::string(text) + "'");
}

template <State E>
std::ostream& operator<<(std::ostream& os, E e) {
  return os << Name(e);
}

// --- An action's life ---

// Every move an action's status may make after it was created. A new action starts pending
// (trust levels 1 and 2), executed (level 3) or refused (level 0).
struct ActionMove {
  ActionStatus from;
  ActionStatus to;
  std::string_view when;  // for docs and errors
};
inline constexpr std::array<ActionMove, 5> kActionMoves = {{
    {ActionStatus::kPending, ActionStatus::kExecuted,
     "a person approved it, or its undo window passed (level 2)"},
    {ActionStatus::kPending, ActionStatus::kRejected,
     "a person rejected it (at level 2, within its undo window: the undo)"},
    {ActionStatus::kPending, ActionStatus::kExpired, "not approved before it expired (level 1)"},
    {ActionStatus::kExecuted, ActionStatus::kDelivered, "the connector delivered it"},
    {ActionStatus::kExecuted, ActionStatus::kFailed, "every delivery attempt failed"},
}};

constexpr bool IsLegalMove(ActionStatus from, ActionStatus to) {
  for (const ActionMove& m : kActionMoves) {
    if (m.from == from && m.to == to) return true;
  }
  return false;
}

// The status a proposal's decision has while its action has `s`: the same, by its spelling.
constexpr DecisionStatus DecisionStatusOf(ActionStatus s) {
  return *Parse<DecisionStatus>(Name(s));
}

// The ledger event that records an action's arrival in status `s`: the same spelling, but
// `proposed` for a pending action.
constexpr LedgerEvent LedgerEventOf(ActionStatus s) {
  return s == ActionStatus::kPending ? LedgerEvent::kProposed : *Parse<LedgerEvent>(Name(s));
}

// Every action status has its decision status and ledger event (the two above cannot fail).
static_assert([] {
  for (ActionStatus s : AllOf<ActionStatus>()) {
    if (!Parse<DecisionStatus>(Name(s))) return false;
    if (s != ActionStatus::kPending && !Parse<LedgerEvent>(Name(s))) return false;
  }
  return true;
}());

// --- A task's life ---

// Every move a task's status may make. A task starts working (a long-running tool's) or
// input_required (a draft waiting for its person).
struct TaskMove {
  TaskStatus from;
  TaskStatus to;
};
inline constexpr std::array<TaskMove, 8> kTaskMoves = {{
    {TaskStatus::kWorking, TaskStatus::kInputRequired},
    {TaskStatus::kWorking, TaskStatus::kCompleted},
    {TaskStatus::kWorking, TaskStatus::kFailed},
    {TaskStatus::kWorking, TaskStatus::kCancelled},
    {TaskStatus::kInputRequired, TaskStatus::kWorking},
    {TaskStatus::kInputRequired, TaskStatus::kCompleted},
    {TaskStatus::kInputRequired, TaskStatus::kFailed},
    {TaskStatus::kInputRequired, TaskStatus::kCancelled},
}};

constexpr bool IsLegalMove(TaskStatus from, TaskStatus to) {
  for (const TaskMove& m : kTaskMoves) {
    if (m.from == from && m.to == to) return true;
  }
  return false;
}

// Completed, failed or cancelled: nothing moves it again.
constexpr bool IsFinal(TaskStatus s) {
  return s == TaskStatus::kCompleted || s == TaskStatus::kFailed || s == TaskStatus::kCancelled;
}

// Whether a decision of class `cls` can have status `status`: a counterparty's decisions of
// one status are read only in the classes that can have it, so the store keeps to this.
constexpr bool DecisionClassMayHaveStatus(DecisionClass cls, DecisionStatus status) {
  switch (cls) {
    case DecisionClass::kActionProposed:
      return status != DecisionStatus::kRecorded;
    case DecisionClass::kDigest:
      return status == DecisionStatus::kPending || status == DecisionStatus::kDelivered ||
             status == DecisionStatus::kFailed;
    default:
      return status == DecisionStatus::kRecorded;
  }
}

}  // namespace cortex
