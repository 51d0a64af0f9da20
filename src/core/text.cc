#include "core/text.h"

#include <algorithm>

#include "core/json_text.h"

namespace cortex {

std::string HeaderSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    auto u = static_cast<unsigned char>(ch);
    char c = u < 0x20 || u == 0x7f ? ' ' : ch;
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string ValidUtf8(std::string text) {
  if (IsValidUtf8(text)) return text;  // the usual case: no copy
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n > 0 && i + n <= text.size() && IsValidUtf8(std::string_view(text).substr(i, n))) {
      out.append(text, i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string FirstSentence(std::string_view text) {
  text = text.substr(0, std::min<size_t>(text.size(), 2000));
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return "";
  text = text.substr(start);
  std::string one = HeaderSafe(text.substr(0, text.find_first_of("\r\n")));
  for (size_t i = 0; i + 1 < one.size(); ++i) {
    if ((one[i] == '.' || one[i] == '!' || one[i] == '?') && one[i + 1] == ' ') {
      return one.substr(0, i + 1);
    }
  }
  return one;
}

std::string MessageIdOf(std::string_view external_id) {
  std::string_view id = external_id;
  if (id.size() >= 2 && id.front() == '<' && id.back() == '>') id = id.substr(1, id.size() - 2);
  size_t at = id.find('@');
  if (at == 0 || at == std::string_view::npos || at + 1 == id.size()) return "";
  for (char c : id) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ' ' || c == '<' || c == '>' ||
        static_cast<unsigned char>(c) >= 0x80) {
      return "";
    }
  }
  return std::string(id);
}

std::string ActionMessageId(std::string_view action_id) {
  return std::string(action_id) + "@cortex";
}

}  // namespace cortex
