// Helpers shared by the read tools: id schemas and JSON views of stored rows.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "store/model.h"
#include "store/store.h"

namespace cortex {

// JSON Schema for a prefixed ULID such as "dec_01HX...", with a description.
nlohmann::json IdSchema(const std::string& prefix, const std::string& description);

// JSON Schema for an RFC 3339 time argument.
nlohmann::json TimeSchema(const std::string& description);

// A notification as the list tools show it: class, times, who, what.
Result<nlohmann::json> NotificationView(ReadTx& tx, const Notification& n);

}  // namespace cortex
