// The engines' configuration, read from a TOML file (`--config FILE`). Every setting has a
// default; docs/configuration.md lists them.
#pragma once

#include <string>

#include "connectors/connector.h"
#include "core/limits.h"
#include "engines/actions.h"

namespace cortex {

struct EngineConfig {
  ActionConfig actions;
  DeliveryConfig delivery;
  // Events pushed to the person ([push]): a webhook connector, or none (connector "").
  DeliveryConfig push = [] {
    DeliveryConfig none;
    none.connector = "";
    return none;
  }();
  HttpLimits http;  // cortex serve only
};

// Reads `path`; an empty path gives the defaults. InvalidArgument names the bad key.
Result<EngineConfig> LoadConfig(const std::string& path);

}  // namespace cortex
