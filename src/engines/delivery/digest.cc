#include "engines/delivery/digest.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/ids.h"
#include "core/json_text.h"
#include "core/time.h"
#include "engines/triage/signals.h"
#include "store/actions.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/episodes.h"
#include "store/notifications.h"
#include "store/outbox.h"
#include "store/workspaces.h"

namespace cortex {
namespace {

using json = nlohmann::json;

constexpr int kMaxDigestApprovals = 50;

// A workspace whose digest is due and not composed yet.
struct DueDigest {
  Workspace workspace;
  WorkspaceSettings settings;
  TimePoint at;     // its digest time
  std::string day;  // the local date of `at`
};

std::string LocalDate(TimePoint t, const WorkspaceSettings& s) {
  return FormatTime(t + std::chrono::minutes(s.utc_offset_minutes)).substr(0, 10);
}

std::string Excerpt(const std::string& text, size_t max) {
  std::string s = text.substr(0, text.find('\n'));
  if (s.size() > max) s = Utf8Prefix(s, max - 3) + "...";
  return s;
}

std::string Plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Composes `due`'s digest in `tx` and queues it. Returns false if there is nothing to
// report (the day is settled all the same) or another process composed it first.
Result<bool> Compose(WriteTx& tx, const Clock& clock, const DueDigest& due) {
  const std::string& ws = due.workspace.id;
  // What waited since the last digest composed (a missed day's items carry over), at
  // most kDigestLookBack.
  auto last = tx.outbox().LastDigestAt(ws);
  if (!last.ok()) return last.status();
  TimePoint since = due.at - std::chrono::hours(24);
  if (*last && **last < since) since = std::max(**last, due.at - kDigestLookBack);
  auto items = tx.notifications().List(ws, TriageClass::kDailyDigest, since, due.at,
                                       kMaxDigestItems + 1, /*newest_first=*/false);
  if (!items.ok()) return items.status();
  DecisionFilter waiting;
  waiting.decision_class = DecisionClass::kActionProposed;
  waiting.status = DecisionStatus::kPending;
  auto proposals = tx.decisions().List(ws, waiting, kMaxDigestApprovals);
  if (!proposals.ok()) return proposals.status();

  json item_list = json::array();
  std::vector<std::string> episode_ids;
  std::string lines;
  bool more = items->size() > static_cast<size_t>(kMaxDigestItems);
  if (more) items->pop_back();
  for (const Notification& n : *items) {
    auto ep = tx.episodes().Get(ws, n.episode_id);
    if (!ep.ok()) return ep.status();
    auto d = tx.decisions().Get(ws, n.decision_id);
    if (!d.ok()) return d.status();
    std::string from = "unknown sender";
    if (ep->entity_id) {
      auto who = tx.entities().Get(ws, *ep->entity_id);
      if (!who.ok()) return who.status();
      from = who->name;
    }
    std::string what = Excerpt(ep->subject.empty() ? ep->summary : ep->subject, 80);
    std::string why = d->rule_summary.value_or("");
    lines += "- " + from + " (" + ep->channel + "): " + what + "\n  Why: " + why + "\n";
    item_list.push_back({{"notification_id", n.id},
                         {"decision_id", n.decision_id},
                         {"episode_id", n.episode_id},
                         {"from", from},
                         {"channel", ep->channel},
                         {"subject", what},
                         {"why", why},
                         {"confidence", d->confidence}});
    episode_ids.push_back(n.episode_id);
  }
  json approvals = json::array();
  std::string approval_lines;
  for (const Decision& p : *proposals) {
    auto a = tx.actions().FindByDecision(ws, p.id);
    if (!a.ok()) return a.status();
    if (a->level != 1) continue;  // level 2 sends by itself when its undo window passes
    auto who = tx.entities().Get(ws, a->entity_id);
    if (!who.ok()) return who.status();
    approval_lines += "- To " + who->name + " (" + a->recipient + "): \"" + Excerpt(a->draft, 100) +
                      "\"" + (a->due_at ? "\n  Expires " + FormatTime(*a->due_at) : "") + "\n";
    approvals.push_back({{"decision_id", p.id},
                         {"action_id", a->id},
                         {"to", who->name},
                         {"recipient", a->recipient},
                         {"draft", a->draft},
                         {"expires_at", a->due_at ? json(FormatTime(*a->due_at)) : json()}});
  }
  // The day is settled at its digest time, also when there is nothing to send: a draft
  // proposed at 20:00 waits for tomorrow's digest rather than make a late one.
  bool empty = item_list.empty() && approvals.empty();
  std::string id = empty ? "" : NewId("dec_", clock);
  auto claimed = tx.outbox().ClaimDigest(ws, due.day, due.at, id, clock.Now());
  if (!claimed.ok()) return claimed.status();
  if (!*claimed || empty) return false;  // another instance composed it, or nothing to say

  std::string headline =
      "Your Cortex digest for " + due.day + ": " + Plural(item_list.size(), "message", "messages") +
      ", " + Plural(approvals.size(), "draft waits", "drafts wait") + " for your approval";
  std::string text = headline + "\n";
  if (!item_list.empty()) text += "\nWaited for today's digest:\n" + lines;
  if (more) text += "- and more: decision.list or the inbox has them all\n";
  if (!approvals.empty()) {
    text +=
        "\nWaiting for your approval (approve or reject in the inbox, or with `cortex inbox`):\n" +
        approval_lines;
  }
  const std::string& to = due.settings.digest_to;

  Decision d;
  d.id = id;
  d.workspace_id = ws;
  d.decision_class = DecisionClass::kDigest;
  d.status = DecisionStatus::kPending;
  d.occurred_at = clock.Now();
  d.payload_summary = headline + ".";
  d.confidence = "certain";
  d.trace_id = NewId("trc_", clock);
  d.agent_version = due.workspace.agent_version;
  d.world_version = due.workspace.world_version;
  d.source_episode_ids = std::move(episode_ids);
  json details = json::object();
  details["day"] = due.day;
  details["digest_at"] = FormatTime(due.at);
  details["to"] = to;
  details["items"] = std::move(item_list);
  details["more_items"] = more;
  details["approvals"] = std::move(approvals);
  d.details_json = DumpJson(details);
  CORTEX_RETURN_IF_ERROR(tx.decisions().Insert(d));

  OutboxItem item;
  item.id = id;
  item.kind = OutboxKind::kDigest;
  item.workspace_id = ws;
  item.recipient = to;
  item.body = text;
  item.next_attempt_at = d.occurred_at;
  item.created_at = d.occurred_at;
  CORTEX_RETURN_IF_ERROR(tx.outbox().Insert(item));
  return true;
}

}  // namespace

Result<int> ComposeDueDigests(Store& store, const Clock& clock, TimePoint now) {
  std::vector<DueDigest> due;
  CORTEX_RETURN_IF_ERROR(store.Read([&](ReadTx& tx) -> Status {
    auto workspaces = tx.workspaces().List();
    if (!workspaces.ok()) return workspaces.status();
    for (Workspace& w : *workspaces) {
      auto settings = tx.workspaces().Settings(w.id);
      if (!settings.ok()) return settings.status();
      if (settings->digest_to.empty()) continue;  // no digest asked for
      // The latest digest time at or before `now`.
      TimePoint at = NextDigest(now, *settings) - std::chrono::hours(24);
      if (now - at > kDigestCatchUp) continue;
      std::string day = LocalDate(at, *settings);
      auto composed = tx.outbox().DigestComposed(w.id, day);
      if (!composed.ok()) return composed.status();
      if (!*composed) due.push_back({std::move(w), *settings, at, std::move(day)});
    }
    return Status::Ok();
  }));
  int composed = 0;
  for (const DueDigest& d : due) {
    // A large ingest batch landing in steps is waited for (once a day, at most its
    // seconds): the digest holds all of it or none.
    auto pass = store.EnterWorkspace(d.workspace.id);
    bool done = false;
    CORTEX_RETURN_IF_ERROR(store.Write([&](WriteTx& tx) -> Status {
      auto c = Compose(tx, clock, d);
      if (!c.ok()) return c.status();
      done = *c;
      return Status::Ok();
    }));
    if (done) ++composed;
  }
  return composed;
}

}  // namespace cortex
