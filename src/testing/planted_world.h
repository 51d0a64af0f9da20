// Worlds with planted behaviour, for the learner's tests and bench (docs/learning.md): some
// counterparties answered fast on every day, some fast on certain weekdays only, some fast
// in the mornings (or afternoons) only, some answered days later, some never answered nor
// written to (newsletters), some answered within minutes even during focus blocks, some
// answered fast except during focus blocks (then just after the block ends), and noise.
// The truth (what a perfect learner finds) comes with the world.
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
  int fast_hours = 4;         // answered within an hour in the mornings (every other counterparty:
                              // afternoons), a day or more later in the other half of the day
  int focus_fast = 2;         // answered within half an hour during focus blocks, a day or more
                              // later outside them (half their messages come during blocks)
  int focus_hold = 2;         // answered within an hour outside focus blocks; during one, within
                              // an hour after it ends (half their messages come during blocks)
  int blocks_per_week = 3;    // two-hour focus blocks on working days (calendar_block)
  int messages_per_week = 3;  // per counterparty (newsletters: 1-2, noise: 2 in all)
  int filler_per_week = 0;    // extra counterparties' messages (random behaviour), for scale
  TimePoint now;
};

// One planted pattern: kind "fast", "slow", "silent", "focus" or "hold"; weekdays a mask
// (bit 0 = Monday), 0 for every day; hours the local window as the rules language has it
// ("00:00-12:00"), "" for all day.
struct Planted {
  std::string kind;
  unsigned weekdays = 0;
  std::string hours;
};

struct PlantedWorld {
  std::vector<Entity> entities;       // ids entity_p<N>; identifier p<N>@planted.example
  std::vector<MessageFact> messages;  // ids ep_p<N>
  std::vector<std::pair<TimePoint, TimePoint>> blocks;  // focus blocks (start, end), by start
  std::map<std::string, std::vector<Planted>> truth;    // entity id -> what was planted
  size_t PlantedCount() const;                          // patterns planted, in all
  // The world as ingest JSONL (docs/ingest.md): entities, the focus blocks, then the
  // messages, oldest first.
  std::string Jsonl() const;
};

PlantedWorld MakePlantedWorld(const PlantedWorldOptions& options);

// How a learner's findings compare with the truth.
struct Score {
  int found = 0;    // findings
  int correct = 0;  // findings that match a planted pattern (kind, days and hours)
  int planted = 0;
  double Precision() const { return found == 0 ? 1.0 : double(correct) / found; }
  double Recall() const { return planted == 0 ? 1.0 : double(correct) / planted; }
};

}  // namespace cortex::testing
