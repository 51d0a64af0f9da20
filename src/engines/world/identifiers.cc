#include "engines/world/identifiers.h"

#include <algorithm>
#include <cctype>

#include "core/ids.h"
#include "core/json_text.h"
#include "core/limits.h"
#include "store/entities.h"

namespace cortex {
namespace {

bool IsHandleChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

}  // namespace

Result<std::string> NormalizeIdentifier(const std::string& raw) {
  auto bad = [&] {
    return Status::InvalidArgument("'" + Utf8Prefix(raw, 64) +
                                   "' is not an email address, @handle or +phone number");
  };
  if (raw.empty() || raw.size() > limits::kMaxIdentifierChars) return bad();
  if (raw[0] == '@') {
    if (raw.size() < 2 || !std::all_of(raw.begin() + 1, raw.end(), IsHandleChar)) return bad();
    return AsciiLower(raw);
  }
  if (raw[0] == '+') {
    std::string digits = "+";
    for (size_t i = 1; i < raw.size(); ++i) {
      char c = raw[i];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        digits += c;
      } else if (c != ' ' && c != '-' && c != '(' && c != ')') {
        return bad();
      }
    }
    if (digits.size() < 6 || digits.size() > 16) return bad();
    return digits;
  }
  size_t at = raw.find('@');
  if (at == std::string::npos || at == 0 || raw.find('@', at + 1) != std::string::npos) {
    return bad();
  }
  std::string domain = raw.substr(at + 1);
  if (domain.size() < 3 || domain.find('.') == std::string::npos || domain.front() == '.' ||
      domain.back() == '.') {
    return bad();
  }
  for (char c : raw) {
    if (std::isspace(static_cast<unsigned char>(c)) ||
        std::iscntrl(static_cast<unsigned char>(c))) {
      return bad();
    }
  }
  return AsciiLower(raw);
}

Result<Entity> ResolveEntity(ReadTx& tx, const std::string& ws, const std::string& ref) {
  if (ref.rfind("entity_", 0) == 0 && ref.find('@') == std::string::npos) {
    return tx.entities().Get(ws, ref);  // an entity id (an address may start so too)
  }
  auto ident = NormalizeIdentifier(ref);
  if (!ident.ok()) return ident.status();
  return tx.entities().FindByIdentifier(ws, *ident);
}

bool IsIdentifierShaped(const std::string& ref) {
  return ref.rfind("entity_", 0) == 0 || ref.front() == '@' || ref.front() == '+' ||
         ref.find('@') != std::string::npos;
}

Result<NameMatch> MatchName(ReadTx& tx, const std::string& ws, const std::string& name,
                            size_t max_candidates) {
  auto found = tx.entities().FindByName(ws, name, static_cast<int>(max_candidates) + 1);
  if (!found.ok()) return found.status();
  NameMatch m;
  std::vector<const Entity*> whole;
  for (const Entity& e : *found) {
    if (AsciiLower(e.name) == AsciiLower(name)) whole.push_back(&e);
  }
  if (found->size() == 1 || whole.size() == 1) {
    m.one = found->size() == 1 ? found->front() : *whole.front();
    return m;
  }
  m.more = found->size() > max_candidates;
  for (Entity& e : *found) {
    if (m.candidates.size() == max_candidates) break;
    m.candidates.push_back(std::move(e));
  }
  return m;
}

Result<Entity> ResolveCounterparty(ReadTx& tx, const std::string& ws, const std::string& ref) {
  if (ref.empty() || IsIdentifierShaped(ref)) return ResolveEntity(tx, ws, ref);
  constexpr size_t kListed = 5;
  auto m = MatchName(tx, ws, ref, kListed);
  if (!m.ok()) return m.status();
  if (m->one) return std::move(*m->one);
  const std::string quoted = "'" + Utf8Prefix(ref, limits::kMaxNameChars) + "'";
  if (m->candidates.empty()) return Status::NotFound("no one named " + quoted + " is known");
  std::string msg = quoted + " matches " + (m->more ? "more than " : "") +
                    std::to_string(m->candidates.size()) + " people: ";
  for (size_t i = 0; i < m->candidates.size(); ++i) {
    const Entity& e = m->candidates[i];
    if (i > 0) msg += ", ";
    msg += e.name;
    // An email address where there is one: what a person tells people apart by.
    auto shown = std::find_if(e.identifiers.begin(), e.identifiers.end(), [](const auto& i) {
      return i.find('@') != std::string::npos && i.front() != '@';
    });
    if (shown == e.identifiers.end()) shown = e.identifiers.begin();
    if (shown != e.identifiers.end()) msg += " <" + *shown + ">";
  }
  return Status::InvalidArgument(msg + "; name one by address or entity id");
}

}  // namespace cortex
