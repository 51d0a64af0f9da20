// The person's history as the learner reads it: each counterparty's messages, each
// received one judged by when (and whether) the person answered it, and the focus block it
// came in (docs/learning.md, "What it looks at").
#include <algorithm>
#include <cmath>

#include "engines/learning/learning_parts.h"

namespace cortex {
namespace learning {

double Weight(TimePoint t, TimePoint now, const LearningConfig& c) {
  double age_days = std::chrono::duration<double>(now - t).count() / 86400.0;
  if (age_days < 0) age_days = 0;
  return std::pow(0.5, age_days / c.half_life_days);
}

namespace {

// Sorts one counterparty's messages and finds each received message's answer.
void Judge(Counterparty& cp) {
  std::sort(cp.messages.begin(), cp.messages.end(), [](const Message& a, const Message& b) {
    return std::tie(a.fact.occurred_at, a.fact.id) < std::tie(b.fact.occurred_at, b.fact.id);
  });
  // thread -> times of sent messages, ascending; "any" for every thread.
  std::unordered_map<std::string_view, std::vector<TimePoint>> by_thread;
  std::vector<TimePoint> any;
  cp.sent.clear();
  cp.received.clear();
  for (const Message& each : cp.messages) {
    const MessageFact& m = each.fact;
    if (!m.sent) continue;
    any.push_back(m.occurred_at);
    if (!m.thread.empty()) by_thread[m.thread].push_back(m.occurred_at);
    cp.sent.push_back(&m);
  }
  static const std::vector<TimePoint> kNone;
  for (const Message& each : cp.messages) {
    const MessageFact& m = each.fact;
    if (m.sent) continue;
    const std::vector<TimePoint>* times = &any;
    if (!m.thread.empty()) {
      auto it = by_thread.find(m.thread);
      times = it == by_thread.end() ? &kNone : &it->second;
    }
    std::optional<TimePoint> reply;
    auto next = std::upper_bound(times->begin(), times->end(), m.occurred_at);
    if (next != times->end()) reply = *next;
    cp.received.push_back({&m, reply, each.weekday, each.minute});
  }
  cp.judged = true;
}

}  // namespace

std::unordered_map<std::string, History> Observe(LearnMemory::Impl& m, const Blocks& blocks,
                                                 TimePoint now, const LearningConfig& c) {
  TimePoint since = now - std::chrono::days(c.lookback_days);
  std::unordered_map<std::string, History> out;
  for (auto& [entity_id, cp] : m.by_entity) {
    if (!cp.judged) Judge(cp);
    History h;
    for (const Answered& a : cp.received) {
      const MessageFact* msg = a.msg;
      if (msg->occurred_at < since) continue;
      Outcome o;
      if (a.reply && *a.reply - msg->occurred_at <= c.fast_reply) {
        o = Outcome::kFast;
      } else if (a.reply && *a.reply - msg->occurred_at <= c.slow_reply) {
        o = Outcome::kMedium;
      } else if (a.reply || now - msg->occurred_at >= c.slow_reply) {
        o = Outcome::kSlow;
      } else {
        continue;  // pending
      }
      h.received.push_back({msg, o, a.reply.has_value(), Weight(msg->occurred_at, now, c),
                            a.weekday, a.minute, a.reply, blocks.EndAt(msg->occurred_at)});
    }
    for (const MessageFact* s : cp.sent) {
      if (s->occurred_at >= since) h.sent.push_back(s);
    }
    if (!h.received.empty() || !h.sent.empty()) out.emplace(entity_id, std::move(h));
  }
  return out;
}

Blocks SortedBlocks(std::vector<std::pair<TimePoint, TimePoint>> spans) {
  std::sort(spans.begin(), spans.end());
  return {std::move(spans)};
}

std::unordered_map<std::string, History> Observe(const std::vector<MessageFact>& messages,
                                                 const Blocks& blocks,
                                                 const WorkspaceSettings& settings, TimePoint now,
                                                 const LearningConfig& c,
                                                 LearnMemory::Impl* scratch) {
  for (const MessageFact& m : messages) scratch->Add(m, settings);
  return Observe(*scratch, blocks, now, c);
}

}  // namespace learning

LearnMemory::LearnMemory() : impl_(std::make_unique<Impl>()) {}
LearnMemory::~LearnMemory() = default;
LearnMemory::LearnMemory(LearnMemory&&) noexcept = default;
LearnMemory& LearnMemory::operator=(LearnMemory&&) noexcept = default;
bool LearnMemory::last_incremental() const { return impl_->incremental; }

}  // namespace cortex
