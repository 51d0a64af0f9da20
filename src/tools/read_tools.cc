#include "tools/read_tools.h"

#include "core/time.h"
#include "store/entities.h"
#include "store/episodes.h"

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

}  // namespace cortex
