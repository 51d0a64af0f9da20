#include "engines/identifiers.h"

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

}  // namespace cortex
