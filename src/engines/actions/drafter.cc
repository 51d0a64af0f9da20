#include "engines/actions/drafter.h"

namespace cortex {
namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string FirstName(const std::string& name) {
  if (name.find('@') != std::string::npos || name.empty() || name[0] == '+') return "";
  return name.substr(0, name.find(' '));
}

}  // namespace

Result<std::string> DraftMessage(const std::string& message, const std::string& tone,
                                 const std::string& recipient_name) {
  std::string body = Trim(message);
  std::string first = FirstName(recipient_name);
  if (tone.empty() || tone == "neutral") return body;
  if (tone == "direct") {
    // Direct: the message alone, as one short paragraph.
    std::string out;
    for (char c : body) out += (c == '\n') ? ' ' : c;
    return out;
  }
  if (tone == "warm") {
    return (first.empty() ? std::string("Hi,") : "Hi " + first + ",") + "\n\n" + body +
           "\n\nThanks so much!";
  }
  if (tone == "formal") {
    return (recipient_name.empty() || first.empty() ? std::string("Hello,")
                                                    : "Dear " + recipient_name + ",") +
           "\n\n" + body + "\n\nKind regards";
  }
  return Status::InvalidArgument("field 'tone': unknown tone '" + tone +
                                 "' (neutral, direct, warm, formal)");
}

}  // namespace cortex
