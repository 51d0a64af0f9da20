#include "tools/read_tools.h"

#include "core/crypto.h"
#include "core/ids.h"
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

}  // namespace cortex
