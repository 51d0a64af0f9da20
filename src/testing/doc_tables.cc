#include "testing/doc_tables.h"

#include <gtest/gtest.h>

#include <fstream>

namespace cortex {

std::vector<std::string> DocTableNames(const std::string& file, const std::string& heading) {
  std::vector<std::string> names;
  std::string path = CORTEX_SOURCE_DIR;
  path.append("/docs/").append(file);
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot read docs/" << file;
    return names;
  }
  std::string line;
  bool under_heading = false, in_table = false;
  while (std::getline(in, line)) {
    if (!under_heading) {
      under_heading = line == heading;
      continue;
    }
    if (line.rfind("| `", 0) == 0) {
      in_table = true;
      size_t end = line.find('`', 3);
      if (end != std::string::npos) names.push_back(line.substr(3, end - 3));
    } else if (in_table && line.rfind("|", 0) != 0) {
      break;  // the table ended
    }
  }
  if (!under_heading) ADD_FAILURE() << "docs/" << file << " has no heading '" << heading << "'";
  return names;
}

}  // namespace cortex
