#include "engines/delivery/delivery.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/ids.h"
#include "engines/actions/ledger.h"
#include "engines/delivery/outgoing_mail.h"
#include "engines/delivery/pushes.h"
#include "store/actions.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/episodes.h"
#include "store/ledger.h"
#include "store/outbox.h"
#include "store/workspaces.h"

namespace cortex {

namespace {

constexpr int kBatch = 50;

}  // namespace

std::chrono::milliseconds RetryBackoff(int failed_attempts) {
  int64_t ms = 1000LL << std::min(failed_attempts - 1, 20);
  return std::chrono::milliseconds(std::min<int64_t>(ms, 300'000));
}

Dispatcher::Dispatcher(Store& store, const Clock& clock, Connector& connector,
                       const DeliveryConfig& config, Connector* push)
    : store_(store), clock_(clock), connector_(connector), push_(push), config_(config) {}

Result<int> Dispatcher::RunOnce(TimePoint now) {
  int delivered = 0;
  for (OutboxKind kind : AllOf<OutboxKind>()) {
    Connector* connector = kind == OutboxKind::kEvent ? push_ : &connector_;
    if (connector == nullptr) continue;  // no [push] webhook: events wait, then are swept
    auto n = RunKind(kind, *connector, now);
    if (!n.ok()) return n.status();
    delivered += *n;
  }
  return delivered;
}

Result<int> Dispatcher::RunKind(OutboxKind kind, Connector& connector, TimePoint now) {
  std::vector<OutboxItem> due;
  CORTEX_RETURN_IF_ERROR(store_.Read([&](ReadTx& tx) {
    auto list = tx.outbox().Due(now, kind, kBatch);
    if (!list.ok()) return list.status();
    due = std::move(*list);
    return Status::Ok();
  }));
  int delivered = 0;
  for (OutboxItem& item : due) {
    // Not while a large ingest batch of the workspace is landing in steps: an event it
    // queued would go out before the batch is whole (and it may yet be undone).
    // Leased under a pass: a row leased then is not part of a batch still landing, and
    // the delivery itself (the network) runs without one, holding no batch up.
    auto pass = store_.TryEnterWorkspace(item.workspace_id);
    if (!pass) continue;
    bool leased = false;
    Status lease = store_.Write([&](WriteTx& tx) {
      auto l = tx.outbox().Lease(item, now, now + std::chrono::seconds(config_.lease_seconds));
      if (!l.ok()) return l.status();
      leased = *l;
      return Status::Ok();
    });
    pass.reset();
    if (!lease.ok()) return lease;  // the store itself is failing: try again next tick
    if (!leased) continue;          // another process has it, or attempted it since we read

    // An event that could not be pushed while it mattered is given up, not pushed late.
    bool stale = kind == OutboxKind::kEvent && now - item.created_at > kPushFreshness;
    Status sent = Status::Ok();
    if (stale) {
      sent = Status::Unavailable("not pushed within " + std::to_string(kPushFreshness.count()) +
                                 " minutes of its event; given up");
    } else if (kind == OutboxKind::kMessage) {
      // Its subject and thread, from the action and the message it answers.
      sent = store_.Read([&](ReadTx& tx) -> Status {
        auto action = tx.actions().Get(item.workspace_id, item.id);
        if (!action.ok()) return action.status();
        auto mail = MailOf(tx, *action);
        if (!mail.ok()) return mail.status();
        item.mail = std::move(*mail);
        return Status::Ok();
      });
    }
    if (sent.ok() && !stale) sent = connector.Deliver(item);  // outside any transaction
    // A refusal for good (SMTP 5xx, webhook 4xx, an unreachable address) is not retried.
    bool permanent = sent.code() == Code::kInvalidArgument;
    TimePoint at = clock_.Now();
    ++item.attempts;
    Status recorded = store_.Write([&](WriteTx& tx) -> Status {
      bool done = true;  // delivered, or failed for good
      if (sent.ok()) {
        item.status = OutboxStatus::kDelivered;
      } else {
        item.last_error = sent.message();
        if (item.attempts >= config_.max_attempts || stale || permanent) {
          item.status = OutboxStatus::kFailed;
        } else {
          item.next_attempt_at = at + RetryBackoff(item.attempts);
          done = false;
        }
      }
      CORTEX_RETURN_IF_ERROR(
          tx.outbox().Update(item, sent.ok() ? std::optional<TimePoint>(at) : std::nullopt));
      if (!done) return Status::Ok();  // will retry
      return RecordOutcome(tx, item, connector, at);
    });
    if (!recorded.ok()) {
      spdlog::warn("outbox {}: cannot record the attempt: {}", item.id, recorded.message());
      continue;  // the lease expires and the row is tried again
    }
    if (sent.ok()) {
      ++delivered;
    } else {
      spdlog::warn("{} {} failed (attempt {}): {}", Name(kind), item.id, item.attempts,
                   sent.message());
    }
  }
  return delivered;
}

// The delivered message as a message_sent episode (docs/actions.md, "Delivery"): triage
// then sees that the person answered. A message delivered before (the same Message-ID,
// e.g. read back from a Sent folder) is not recorded twice.
Status Dispatcher::RecordSent(WriteTx& tx, const Action& action, const OutboxItem::Mail& mail,
                              TimePoint at) {
  auto exists = tx.episodes().ExternalIdExists(action.workspace_id, ActionMessageId(action.id));
  if (!exists.ok()) return exists.status();
  if (*exists) return Status::Ok();
  auto who = tx.entities().Get(action.workspace_id, action.entity_id);
  if (!who.ok()) return who.status();
  auto workspace = tx.workspaces().Get(action.workspace_id);
  if (!workspace.ok()) return workspace.status();
  Episode e = SentEpisodeOf(action, mail, who->name, at);
  e.id = NewId("ep_", clock_);
  e.world_version = NewIdAfter("wv_", clock_, workspace->world_version);
  e.created_at = at;
  CORTEX_RETURN_IF_ERROR(tx.episodes().Insert(e));
  return tx.workspaces().SetWorldVersion(action.workspace_id, e.world_version);
}

Status Dispatcher::RecordOutcome(WriteTx& tx, const OutboxItem& item, Connector& connector,
                                 TimePoint at) {
  bool ok = item.status == OutboxStatus::kDelivered;
  switch (item.kind) {
    case OutboxKind::kEvent:
      return Status::Ok();  // the row itself is the record
    case OutboxKind::kDigest:
      return tx.decisions().SetStatus(item.workspace_id, item.id,
                                      ok ? DecisionStatus::kDelivered : DecisionStatus::kFailed);
    case OutboxKind::kMessage:
      break;
  }
  auto action = tx.actions().Get(item.workspace_id, item.id);
  if (!action.ok()) return action.status();
  auto entries = tx.ledger().ListForAction(item.workspace_id, item.id);
  if (!entries.ok()) return entries.status();
  nlohmann::json provenance =
      entries->empty() ? nlohmann::json::object() : entries->front().provenance;
  nlohmann::json detail = {{"connector", connector.name()}, {"attempts", item.attempts}};
  if (!ok) detail["error"] = item.last_error;
  ActionStatus to = ok ? ActionStatus::kDelivered : ActionStatus::kFailed;
  CORTEX_RETURN_IF_ERROR(tx.actions().Transition(item.workspace_id, item.id,
                                                 ActionStatus::kExecuted, to, std::nullopt, at));
  if (ok) CORTEX_RETURN_IF_ERROR(RecordSent(tx, *action, item.mail, at));
  auto led =
      AppendLedgerEntry(tx, clock_, item.workspace_id, item.id, action->decision_id,
                        ok ? LedgerEvent::kDelivered : LedgerEvent::kFailed, provenance, detail);
  if (!led.ok()) return led.status();
  return tx.decisions().SetStatus(item.workspace_id, action->decision_id, DecisionStatusOf(to));
}

}  // namespace cortex
