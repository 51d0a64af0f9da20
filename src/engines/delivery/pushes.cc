#include "engines/delivery/pushes.h"

#include "core/ids.h"
#include "core/json_text.h"
#include "core/time.h"
#include "store/outbox.h"

namespace cortex {

Status QueuePush(WriteTx& tx, const Clock& clock, const std::string& ws, std::string_view type,
                 nlohmann::json data) {
  TimePoint now = clock.Now();
  OutboxItem item;
  item.id = NewId("evt_", clock);
  item.kind = OutboxKind::kEvent;
  item.workspace_id = ws;
  item.recipient = std::string(type);
  nlohmann::json body = nlohmann::json::object();
  body["id"] = item.id;
  body["type"] = type;
  body["workspace_id"] = ws;
  body["created_at"] = FormatTime(now);
  body["data"] = std::move(data);
  item.body = DumpJson(body);
  item.next_attempt_at = now;
  item.created_at = now;
  return tx.outbox().Insert(item);
}

}  // namespace cortex
