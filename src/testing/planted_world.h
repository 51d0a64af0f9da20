// Worlds with planted behaviour, for the learner's tests and bench (docs/learning.md): some
// counterparties answered fast on every day, some fast on certain weekdays only, some
// answered days later, some never answered nor written to (newsletters), and noise. The
// truth (what a perfect learner finds) comes with the world.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "store/episodes.h"
#include "store/model.h"

namespace cortex::testing {

struct PlantedWorldOptions {
  uint32_t seed = 1;
  int weeks = 8;     // of history, ending the day before `now`
  int fast_all = 4;  // answered within an hour, any day
  int fast_days =
      4;         // answered within an hour on one or two weekdays, a day or more later otherwise
  int slow = 4;  // answered two to four days later, or not at all
  int newsletters = 4;        // a message or two a week, never answered, never written to
  int noise = 6;              // two messages: one answered fast, one late
  int random = 4;             // answered after a random delay of 0 to 48 hours
  int messages_per_week = 3;  // per counterparty (newsletters: 1-2, noise: 2 in all)
  int filler_per_week = 0;    // extra counterparties' messages (random behaviour), for scale
  TimePoint now;
};

// One planted pattern: kind "fast", "slow" or "silent"; weekdays a mask (bit 0 = Monday),
// 0 for every day.
struct Planted {
  std::string kind;
  unsigned weekdays = 0;
};

struct PlantedWorld {
  std::vector<Entity> entities;          // ids entity_p<N>; identifier p<N>@planted.example
  std::vector<MessageFact> messages;     // ids ep_p<N>
  std::map<std::string, Planted> truth;  // entity id -> what was planted
  // The world as ingest JSONL (docs/ingest.md): entities, then episodes, oldest first.
  std::string Jsonl() const;
};

PlantedWorld MakePlantedWorld(const PlantedWorldOptions& options);

// How a learner's findings compare with the truth.
struct Score {
  int found = 0;    // findings
  int correct = 0;  // findings that match a planted pattern (kind and days)
  int planted = 0;
  double Precision() const { return found == 0 ? 1.0 : double(correct) / found; }
  double Recall() const { return planted == 0 ? 1.0 : double(correct) / planted; }
};

}  // namespace cortex::testing
