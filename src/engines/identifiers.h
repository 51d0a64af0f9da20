// Counterparty identifiers: email addresses, @handles and phone numbers.
#pragma once

#include <string>

#include "core/status.h"
#include "store/store.h"

namespace cortex {

// Returns the canonical form: emails and handles lowercased, phones as '+' and digits.
// InvalidArgument if `raw` is none of the three.
Result<std::string> NormalizeIdentifier(const std::string& raw);

// Finds the entity `ref` names in workspace `ws`: an entity id ("entity_...") or any of its
// identifiers. NotFound if there is none.
Result<Entity> ResolveEntity(ReadTx& tx, const std::string& ws, const std::string& ref);

}  // namespace cortex
