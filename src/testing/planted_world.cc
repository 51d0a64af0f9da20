#include "testing/planted_world.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>

#include "core/time.h"

namespace cortex::testing {
namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::minutes;

class Builder {
 public:
  Builder(const PlantedWorldOptions& o, PlantedWorld& w) : o_(o), w_(w), rng_(o.seed) {
    // Monday 00:00 UTC of the first week: `weeks` whole weeks before the Monday of now's week.
    int64_t day = std::chrono::floor<days>(o.now.time_since_epoch()).count();
    int64_t monday = day - ((day + 3) % 7);  // 1970-01-01 was a Thursday
    start_ = TimePoint(days(monday - 7 * int64_t{o.weeks}));
  }

  std::string AddEntity(const std::string& name) {
    int n = static_cast<int>(w_.entities.size());
    Entity e;
    e.id = "entity_p" + std::to_string(n);
    e.kind = "person";
    e.name = name + " " + std::to_string(n);
    e.identifiers = {"p" + std::to_string(n) + "@planted.example"};
    w_.entities.push_back(e);
    return e.id;
  }

  // A received message on `weekday` of `week` during working hours, and the person's
  // answer `reply` later (none if negative). Only what happened before now is kept.
  void Exchange(const std::string& entity, int week, int weekday, minutes reply) {
    ExchangeAt(entity, Day(week, weekday) + hours(9) + minutes(Uniform(0, 8 * 60 - 1)), reply);
  }
  // The same at `at`.
  void ExchangeAt(const std::string& entity, TimePoint at, minutes reply) {
    if (at >= o_.now) return;
    std::string thread = "t" + std::to_string(threads_++);
    Add(entity, false, at, thread);
    if (reply.count() >= 0 && at + reply < o_.now) Add(entity, true, at + reply, thread);
  }
  // Midnight (UTC) starting `weekday` of `week`.
  TimePoint Day(int week, int weekday) const { return start_ + days(7 * week + weekday); }
  // A time during working hours, on a working day of `week`, outside every focus block.
  TimePoint OutsideBlocks(int week) {
    for (;;) {
      TimePoint at = Day(week, Uniform(0, 4)) + hours(9) + minutes(Uniform(0, 8 * 60 - 1));
      bool inside = std::any_of(w_.blocks.begin(), w_.blocks.end(),
                                [&](const auto& b) { return b.first <= at && at < b.second; });
      if (!inside) return at;
    }
  }

  // A reply delay: fast (5 to 60 minutes), late (26 to 72 hours).
  minutes Fast() { return minutes(Uniform(5, 60)); }
  minutes Late() { return minutes(Uniform(26 * 60, 72 * 60)); }
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  const PlantedWorldOptions& o() const { return o_; }

 private:
  void Add(const std::string& entity, bool sent, TimePoint at, const std::string& thread) {
    MessageFact m;
    m.id = "ep_p" + std::to_string(w_.messages.size());
    m.sent = sent;
    m.occurred_at = at;
    m.entity_id = entity;
    m.thread = thread;
    w_.messages.push_back(std::move(m));
  }

  const PlantedWorldOptions& o_;
  PlantedWorld& w_;
  std::mt19937 rng_;
  TimePoint start_;
  int threads_ = 0;
};

using Span = std::pair<TimePoint, TimePoint>;
const minutes kNever{-1};

// Focus blocks first (the counterparties' messages are placed around them): two hours,
// starting on the hour between 09:00 and 15:00, on `blocks_per_week` working days. Returns
// each week's.
std::vector<std::vector<Span>> PlantBlocks(Builder& b, PlantedWorld& w,
                                           const PlantedWorldOptions& o) {
  std::vector<std::vector<Span>> blocks_of_week(static_cast<size_t>(o.weeks));
  for (int week = 0; week < o.weeks; ++week) {
    std::vector<int> days = {0, 1, 2, 3, 4};
    std::shuffle(days.begin(), days.end(), std::mt19937(o.seed * 1000u + week));
    for (int i = 0; i < std::min(o.blocks_per_week, 5); ++i) {
      TimePoint start = b.Day(week, days[i]) + hours(b.Uniform(9, 15));
      if (start + hours(2) >= o.now) continue;
      blocks_of_week[week].emplace_back(start, start + hours(2));
      w.blocks.emplace_back(start, start + hours(2));
    }
  }
  std::sort(w.blocks.begin(), w.blocks.end());
  return blocks_of_week;
}

// Counterparties answered fast: on any day, or on one or two weekdays only.
void PlantFast(Builder& b, PlantedWorld& w, const PlantedWorldOptions& o) {
  for (int i = 0; i < o.fast_all; ++i) {
    std::string e = b.AddEntity("Fast");
    w.truth[e] = {{"fast", 0, ""}};
    for (int week = 0; week < o.weeks; ++week) {
      for (int m = 0; m < o.messages_per_week; ++m) b.Exchange(e, week, b.Uniform(0, 4), b.Fast());
    }
  }
  for (int i = 0; i < o.fast_days; ++i) {
    std::string e = b.AddEntity("Weekday");
    // One weekday, or two (every other counterparty).
    int d1 = b.Uniform(0, 4);
    unsigned mask = 1u << d1;
    if (i % 2 == 1) mask |= 1u << ((d1 + 2) % 5);
    w.truth[e] = {{"fast", mask, ""}};
    std::vector<int> on, off;
    for (int d = 0; d < 5; ++d) ((mask & (1u << d)) ? on : off).push_back(d);
    for (int week = 0; week < o.weeks; ++week) {
      for (int m = 0; m < o.messages_per_week; ++m) {
        if (m % 2 == 0) {
          b.Exchange(e, week, on[b.Uniform(0, static_cast<int>(on.size()) - 1)], b.Fast());
        } else {
          b.Exchange(e, week, off[b.Uniform(0, static_cast<int>(off.size()) - 1)], b.Late());
        }
      }
    }
  }
}

// Counterparties answered slowly or not at all, and newsletters.
void PlantSlow(Builder& b, PlantedWorld& w, const PlantedWorldOptions& o) {
  for (int i = 0; i < o.slow; ++i) {
    std::string e = b.AddEntity("Slow");
    w.truth[e] = {{"slow", 0, ""}};
    for (int week = 0; week < o.weeks; ++week) {
      for (int m = 0; m < o.messages_per_week; ++m) {
        b.Exchange(e, week, b.Uniform(0, 4),
                   b.Chance(0.7) ? minutes(b.Uniform(48 * 60, 96 * 60)) : kNever);
      }
    }
  }
  for (int i = 0; i < o.newsletters; ++i) {
    std::string e = b.AddEntity("Newsletter");
    w.truth[e] = {{"silent", 0, ""}};
    for (int week = 0; week < o.weeks; ++week) {
      int n = b.Uniform(1, 2);
      for (int m = 0; m < n; ++m) b.Exchange(e, week, b.Uniform(0, 6), kNever);
    }
  }
}

// Counterparties with no pattern: two messages each, or random delays.
void PlantNoise(Builder& b, const PlantedWorldOptions& o) {
  for (int i = 0; i < o.noise; ++i) {
    std::string e = b.AddEntity("Noise");
    b.Exchange(e, b.Uniform(0, o.weeks - 1), b.Uniform(0, 4), b.Fast());
    b.Exchange(e, b.Uniform(0, o.weeks - 1), b.Uniform(0, 4), b.Late());
  }
  for (int i = 0; i < o.random; ++i) {
    std::string e = b.AddEntity("Random");
    for (int week = 0; week < o.weeks; ++week) {
      for (int m = 0; m < o.messages_per_week; ++m) {
        b.Exchange(e, week, b.Uniform(0, 4), minutes(b.Uniform(0, 48 * 60)));
      }
    }
  }
}

// Counterparties answered fast in one half of the day only.
void PlantHours(Builder& b, PlantedWorld& w, const PlantedWorldOptions& o) {
  for (int i = 0; i < o.fast_hours; ++i) {
    std::string e = b.AddEntity("Hours");
    bool mornings = i % 2 == 0;
    w.truth[e] = {{"fast", 0, mornings ? "00:00-12:00" : "12:00-00:00"}};
    for (int week = 0; week < o.weeks; ++week) {
      for (int m = 0; m < o.messages_per_week; ++m) {
        // Alternately in the morning (09:00-11:59) and the afternoon (12:00-16:59).
        bool morning = m % 2 == 0;
        minutes at = morning ? minutes(b.Uniform(9 * 60, 12 * 60 - 1))
                             : minutes(b.Uniform(12 * 60, 17 * 60 - 1));
        b.ExchangeAt(e, b.Day(week, b.Uniform(0, 4)) + at,
                     morning == mornings ? b.Fast() : b.Late());
      }
    }
  }
}

// Focus counterparties: every other message during one of the week's blocks (in its first
// 100 minutes), the others outside every block.
void PlantFocus(Builder& b, PlantedWorld& w, const PlantedWorldOptions& o,
                const std::vector<std::vector<Span>>& blocks_of_week) {
  auto focus = [&](const std::string& e, bool hold) {
    for (int week = 0; week < o.weeks; ++week) {
      const auto& spans = blocks_of_week[week];
      for (int m = 0; m < o.messages_per_week; ++m) {
        if (m % 2 == 0 && !spans.empty()) {
          const Span& block = spans[b.Uniform(0, static_cast<int>(spans.size()) - 1)];
          TimePoint at = block.first + minutes(b.Uniform(0, 99));
          // focus: within half an hour, before the block ends; hold: within an hour after.
          minutes reply = hold ? std::chrono::duration_cast<minutes>(block.second - at) +
                                     minutes(b.Uniform(5, 60))
                               : minutes(b.Uniform(5, 20));
          b.ExchangeAt(e, at, reply);
        } else {
          b.ExchangeAt(e, b.OutsideBlocks(week), hold ? b.Fast() : b.Late());
        }
      }
    }
  };
  for (int i = 0; i < o.focus_fast; ++i) {
    std::string e = b.AddEntity("Focus");
    w.truth[e] = {{"focus", 0, ""}};
    focus(e, false);
  }
  for (int i = 0; i < o.focus_hold; ++i) {
    std::string e = b.AddEntity("Hold");
    // Answered within 3 hours on the whole too (fast), but held during blocks.
    w.truth[e] = {{"fast", 0, ""}, {"hold", 0, ""}};
    focus(e, true);
  }
}

// Extra counterparties' messages (random behaviour), for scale.
void PlantFiller(Builder& b, const PlantedWorldOptions& o) {
  if (o.filler_per_week > 0) {
    std::vector<std::string> pool;
    for (int i = 0; i < 200; ++i) pool.push_back(b.AddEntity("Filler"));
    for (int week = 0; week < o.weeks; ++week) {
      for (int m = 0; m < o.filler_per_week; ++m) {
        b.Exchange(pool[b.Uniform(0, 199)], week, b.Uniform(0, 4), minutes(b.Uniform(0, 48 * 60)));
      }
    }
  }
}

}  // namespace

PlantedWorld MakePlantedWorld(const PlantedWorldOptions& o) {
  PlantedWorld w;
  Builder b(o, w);
  // In this order: the seeded draws make the same world for the same options.
  auto blocks_of_week = PlantBlocks(b, w, o);
  PlantFast(b, w, o);
  PlantSlow(b, w, o);
  PlantNoise(b, o);
  PlantHours(b, w, o);
  PlantFocus(b, w, o, blocks_of_week);
  PlantFiller(b, o);
  std::sort(w.messages.begin(), w.messages.end(), [](const MessageFact& a, const MessageFact& c) {
    return a.occurred_at < c.occurred_at;
  });
  return w;
}

size_t PlantedWorld::PlantedCount() const {
  size_t n = 0;
  for (const auto& [entity, planted] : truth) n += planted.size();
  return n;
}

std::string PlantedWorld::Jsonl() const {
  std::string out;
  std::map<std::string, std::string> address;
  for (const Entity& e : entities) {
    address[e.id] = e.identifiers[0];
    nlohmann::json line = {
        {"type", "entity"}, {"name", e.name}, {"kind", e.kind}, {"identifiers", e.identifiers}};
    out += line.dump() + "\n";
  }
  for (const auto& [start, end] : blocks) {
    nlohmann::json line = {{"type", "episode"},
                           {"kind", "calendar_block"},
                           {"occurred_at", FormatTime(start)},
                           {"ends_at", FormatTime(end)},
                           {"subject", "Deep work"},
                           {"summary", "Focus block"},
                           {"external_id", "block_" + FormatTime(start)}};
    out += line.dump() + "\n";
  }
  for (const MessageFact& m : messages) {
    nlohmann::json line = {{"type", "episode"},
                           {"kind", m.sent ? "message_sent" : "message_received"},
                           {"occurred_at", FormatTime(m.occurred_at)},
                           {"counterparty", address.at(m.entity_id)},
                           {"subject", "Planted " + m.thread},
                           {"summary", "Planted message"},
                           {"thread", m.thread},
                           {"external_id", m.id}};
    out += line.dump() + "\n";
  }
  return out;
}

}  // namespace cortex::testing
