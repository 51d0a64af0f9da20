// libFuzzer target: a rules file (YAML) through the parser and validation. Whatever the
// input, the answer is a rule file or an InvalidArgument naming the line; a parsed file
// sorts for evaluation without trouble.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engines/triage/rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cortex;
  auto parsed = ParseRuleFile(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!parsed.ok()) {
    if (parsed.status().code() != Code::kInvalidArgument) std::abort();
    return 0;
  }
  SortForEvaluation(parsed->rules);
  return 0;
}
