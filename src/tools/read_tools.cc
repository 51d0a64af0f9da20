#include "tools/read_tools.h"

#include "core/crypto.h"
#include "core/ids.h"
#include "core/time.h"
#include "store/actions.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/episodes.h"
#include "store/ledger.h"

namespace cortex {

using nlohmann::json;

json IdSchema(const std::string& prefix, const std::string& description) {
  return {{"type", "string"},
          {"pattern", "^" + prefix + "[0-7][0-9A-HJKMNP-TV-Z]{25}$"},
          {"description", description}};
}

json TimeSchema(const std::string& description) {
  return {{"type", "string"}, {"maxLength", 64}, {"description", description}};
}

Result<PageCursor> ReadPageCursor(const json& args, std::string_view prefix,
                                  std::string_view tool) {
  json filter = args;
  filter.erase("cursor");
  filter.erase("limit");
  PageCursor page{Sha256Hex(filter.dump()).substr(0, 8), std::nullopt};
  if (!args.contains("cursor")) return page;
  const std::string& cursor = args["cursor"].get_ref<const std::string&>();
  size_t dot = cursor.find('.');
  std::string last = cursor.substr(0, dot);
  if (dot == std::string::npos || !IsId(last, prefix)) {
    return Status::InvalidArgument("field 'cursor': not a cursor from " + std::string(tool));
  }
  if (cursor.substr(dot + 1) != page.filter_hash) {
    return Status::InvalidArgument("field 'cursor': it belongs to a query with other filters");
  }
  page.after = last;
  return page;
}

Result<json> NotificationView(ReadTx& tx, const Notification& n) {
  auto ep = tx.episodes().Get(n.workspace_id, n.episode_id);
  if (!ep.ok()) return ep.status();
  json who = nullptr;
  if (n.entity_id) {
    auto e = tx.entities().Get(n.workspace_id, *n.entity_id);
    if (!e.ok()) return e.status();
    who = {{"entity_id", e->id}, {"name", e->name}, {"tags", e->tags}};
  }
  return json{{"notification_id", n.id},
              {"triage_class", Name(n.triage_class)},
              {"surface_at", n.surface_at ? json(FormatTime(*n.surface_at)) : json(nullptr)},
              {"occurred_at", FormatTime(ep->occurred_at)},
              {"counterparty", who},
              {"channel", ep->channel},
              {"subject", ep->subject},
              {"summary", ep->summary},
              {"episode_id", ep->id},
              {"decision_id", n.decision_id}};
}

Result<std::vector<PendingApprovalView>> PendingApprovalViews(
    ReadTx& tx, const std::string& workspace_id, const std::optional<std::string>& entity_id,
    int limit) {
  const std::string& ws = workspace_id;
  DecisionFilter filter;
  filter.decision_class = DecisionClass::kActionProposed;
  filter.status = DecisionStatus::kPending;
  filter.entity_id = entity_id;
  auto proposals = tx.decisions().List(ws, filter, limit);
  if (!proposals.ok()) return proposals.status();
  std::vector<PendingApprovalView> views;
  for (const Decision& d : *proposals) {
    auto a = tx.actions().FindByDecision(ws, d.id);
    if (!a.ok()) return a.status();
    auto who = tx.entities().Get(ws, a->entity_id);
    if (!who.ok()) return who.status();
    auto ledger = tx.ledger().ListForAction(ws, a->id);
    if (!ledger.ok()) return ledger.status();
    PendingApprovalView view;
    view.item = json::object();
    view.item["decision_id"] = d.id;
    view.item["action_id"] = a->id;
    view.item["counterparty"] = {{"entity_id", who->id}, {"name", who->name}};
    view.item["recipient"] = a->recipient;
    view.item["message"] = a->message;
    view.item["draft"] = a->draft;
    view.item["level"] = a->level;
    view.item["urgent"] = a->urgent;
    view.item["due_at"] = a->due_at ? json(FormatTime(*a->due_at)) : json(nullptr);
    view.item["created_at"] = FormatTime(a->created_at);
    if (!ledger->empty()) view.provenance = std::move(ledger->front().provenance);
    views.push_back(std::move(view));
  }
  return views;
}

}  // namespace cortex
