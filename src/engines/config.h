// The engines' configuration: every setting has a default (docs/configuration.md lists
// them). Read from a TOML file (`--config FILE`) by config_file.h, at the top of the tree.
#pragma once

#include <string>
#include <vector>

#include "connectors/caldav.h"
#include "connectors/connector.h"
#include "connectors/imap.h"
#include "core/limits.h"
#include "engines/actions/actions.h"
#include "engines/learning/learning.h"

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
  HttpLimits http;                         // cortex serve only
  std::vector<ImapAccount> imap;           // [[connectors.imap]]: mailboxes read by sync and serve
  std::vector<CalendarAccount> calendars;  // [[connectors.calendar]]: likewise, calendars
  // The learner while serving ([learning], docs/learning.md): a pass for a workspace once
  // its world has been still for `settle_seconds` after a change, and every
  // `every_hours` regardless.
  struct ServeLearning {
    bool enabled = true;
    int64_t settle_seconds = 60;
    int64_t every_hours = 24;
  } learning_serve;
  LearningConfig learning;
};

}  // namespace cortex
