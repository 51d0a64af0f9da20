// For tests that hold docs/ to the code's own tables: the first column of a Markdown table.
#pragma once

#include <string>
#include <vector>

namespace cortex {

// The `code` names in the first column of the first table after the heading line `heading`
// (e.g. "## Signals") of docs/FILE (e.g. "rules.md"), in order: "| `first_contact` | ..." gives
// first_contact. Fails the calling test (and returns nothing) if the file or heading is missing.
std::vector<std::string> DocTableNames(const std::string& file, const std::string& heading);

}  // namespace cortex
