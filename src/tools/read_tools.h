// Helpers shared by the read tools: id schemas and JSON views of stored rows.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/model.h"
#include "store/store.h"

namespace cortex {

// JSON Schema for a prefixed ULID such as "dec_01HX...", with a description.
nlohmann::json IdSchema(const std::string& prefix, const std::string& description);

// JSON Schema for an RFC 3339 time argument.
nlohmann::json TimeSchema(const std::string& description);

// A notification as the list tools show it: class, times, who, what.
Result<nlohmann::json> NotificationView(ReadTx& tx, const Notification& n);

// An action waiting for the person's approval, as both approval inboxes show it (the
// cortex://inbox resource, the web inbox): `item` holds decision_id, action_id,
// counterparty {entity_id, name}, recipient, message, draft, level, urgent, due_at and
// created_at; `provenance` is that of the action's first ledger entry (none if it has no
// entry), from which each inbox says why.
struct PendingApprovalView {
  nlohmann::json item;
  std::optional<nlohmann::json> provenance;
};
// The workspace's pending action proposals (to `entity_id` only, if given), at most `limit`,
// in the order decisions().List gives them (newest first).
Result<std::vector<PendingApprovalView>> PendingApprovalViews(
    ReadTx& tx, const std::string& workspace_id, const std::optional<std::string>& entity_id,
    int limit);

// Paging of the list tools. A cursor is "<last id of the page>.<8 hex of the filter's
// hash>", so it only continues the query it came from.
struct PageCursor {
  std::string filter_hash;           // of the arguments less `cursor` and `limit`
  std::optional<std::string> after;  // the last id of the previous page, if args has a cursor
  // The cursor of the page that ends with `last_id`.
  std::string Next(const std::string& last_id) const { return last_id + "." + filter_hash; }
};
// Reads args' cursor for `tool`, whose ids start with `prefix`. InvalidArgument (naming the
// field) for a cursor that is not one of `tool`'s or belongs to a query with other filters.
Result<PageCursor> ReadPageCursor(const nlohmann::json& args, std::string_view prefix,
                                  std::string_view tool);

}  // namespace cortex
