// The configuration file (`--config FILE`, TOML, docs/configuration.md) read into the
// engines' settings. Unknown keys are refused with the nearest known one suggested.
#pragma once

#include <string>

#include "core/status.h"
#include "engines/config.h"

namespace cortex {

// Reads `path`; an empty path gives the defaults. InvalidArgument names the bad key.
Result<EngineConfig> LoadConfig(const std::string& path);

// A secret given inline, in a file (`file`, trailing newline dropped) or in an environment
// variable (`env`): at most one of them. `key` names it in errors, which never hold the
// secret itself.
Result<std::string> ReadSecret(const std::string& key, const std::string& inline_value,
                               const std::string& file, const std::string& env);

}  // namespace cortex
