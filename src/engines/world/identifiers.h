// Counterparty identifiers: email addresses, @handles and phone numbers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/store.h"

namespace cortex {

// Returns the canonical form: emails and handles lowercased, phones as '+' and digits.
// InvalidArgument if `raw` is none of the three.
Result<std::string> NormalizeIdentifier(const std::string& raw);

// Finds the entity `ref` names in workspace `ws`: an entity id ("entity_...") or any of its
// identifiers. NotFound if there is none.
Result<Entity> ResolveEntity(ReadTx& tx, const std::string& ws, const std::string& ref);

// An entity id, or something shaped like an email address, @handle or +phone number (to
// look up as such); anything else is a name.
bool IsIdentifierShaped(const std::string& ref);

// The people a name names (EntitiesReader::FindByName): `one` when it names exactly one
// (the only match, or the only one whose whole name it is), else up to `max_candidates`
// in `candidates`, `more` when there were more. Neither: no one.
struct NameMatch {
  std::optional<Entity> one;
  std::vector<Entity> candidates;
  bool more = false;
};
Result<NameMatch> MatchName(ReadTx& tx, const std::string& ws, const std::string& name,
                            size_t max_candidates);

// ResolveEntity for filters a person fills in (decision.list's counterparty, a prompt's,
// `cortex trust set`): also a name Cortex knows. A name of several people is
// InvalidArgument listing them with their addresses; a name of no one, NotFound.
Result<Entity> ResolveCounterparty(ReadTx& tx, const std::string& ws, const std::string& ref);

}  // namespace cortex
