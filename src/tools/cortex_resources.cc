// The product's MCP resources, prompts and completions (docs/mcp.md, "Resources and
// prompts"). Resources read what the read tools read, through those tools: one answer for a
// tool call and a resource read, scoped to the caller's workspace the same way.
#include <algorithm>

#include "core/limits.h"
#include "core/time.h"
#include "engines/world/identifiers.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/notifications.h"
#include "store/rules.h"
#include "tools/cortex_tools.h"
#include "tools/read_tools.h"

namespace cortex {

using nlohmann::json;

namespace {

constexpr char kJson[] = "application/json";

// How far around now notification ids are offered for completion.
constexpr std::chrono::hours kNotificationCompletionWindow{24 * 30};
// Entities scanned for counterparty completion (the first by id; docs/mcp.md).
constexpr int kMaxCompletionEntities = 5000;

// A read tool's success body, or its error as a Status (NotFound for "no such thing", and for
// an argument its schema refuses: a malformed id names nothing either).
Result<json> CallReadTool(const ToolRegistry& tools, const std::string& name, const json& args,
                          ToolContext& ctx) {
  ToolReply reply = tools.Call(name, args, ctx);
  if (!reply.is_error()) return reply.body();
  const json& body = reply.body();
  std::string code = body.value("error", "internal_error");
  std::string message = body.value("message", code);
  if (code == "not_found" || code == "invalid_arguments") return Status::NotFound(message);
  if (code == "unauthorized") return Status::Unauthorized(message);
  if (code == "unavailable" || code == "quota_exceeded") return Status::Unavailable(message);
  return Status::Internal(message);
}

json TextContents(const std::string& uri, const json& body) {
  return json::array({{{"uri", uri}, {"mimeType", kJson}, {"text", body.dump()}}});
}

// A prompt message embedding resource `uri` as read now.
json EmbeddedResource(const std::string& uri, const json& body) {
  return {{"role", "user"},
          {"content",
           {{"type", "resource"},
            {"resource", {{"uri", uri}, {"mimeType", kJson}, {"text", body.dump()}}}}}};
}

json UserText(std::string text) {
  return {{"role", "user"}, {"content", {{"type", "text"}, {"text", std::move(text)}}}};
}

// The approval inbox: actions waiting for the person, newest first, with the draft and why.
Result<json> PendingApprovals(ToolContext& ctx, const std::optional<std::string>& entity_id) {
  json pending = json::array();
  Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
    auto views = PendingApprovalViews(tx, ctx.auth.workspace_id, entity_id, limits::kMaxInboxItems);
    if (!views.ok()) return views.status();
    for (PendingApprovalView& v : *views) {
      if (v.provenance && v.provenance->is_object()) {
        const json& p = *v.provenance;
        v.item["why"] = {{"summary", p.value("rule_summary", "")},
                         {"level_reason", p.value("level_reason", "")},
                         {"confidence", p.value("confidence", "just_guessing")}};
      }
      pending.push_back(std::move(v.item));
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return json{{"as_of", FormatTime(ctx.clock.Now())}, {"pending", std::move(pending)}};
}

const char* RuleStatusName(RuleStatus s) {
  switch (s) {
    case RuleStatus::kProposed:
      return "proposed";
    case RuleStatus::kActive:
      return "active";
    case RuleStatus::kRetired:
      return "retired";
    case RuleStatus::kRejected:
      return "rejected";
  }
  return "active";
}

json RuleJson(const Rule& r) {
  json rule = json::object();
  rule["rule_id"] = r.id;
  rule["name"] = r.name;
  rule["kind"] = Name(r.kind);
  rule["summary"] = r.summary;
  rule["origin"] = Name(r.origin);
  rule["definition"] = RuleDefinitionJson(r);
  rule["hits"] = r.hits;
  rule["created_at"] = FormatTime(r.created_at);
  return rule;
}

Result<json> RulesInForce(ToolContext& ctx) {
  json rules = json::array();
  Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
    auto list = tx.rules().List(ctx.auth.workspace_id, /*active_only=*/true);
    if (!list.ok()) return list.status();
    for (const Rule& r : *list) rules.push_back(RuleJson(r));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return json{{"rules", std::move(rules)}};
}

// One rule: the rule in force so named, or any rule by its id (rul_...), with its status.
Result<json> OneRule(ToolContext& ctx, const std::string& ref) {
  json body;
  Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
    auto list = tx.rules().List(ctx.auth.workspace_id, /*active_only=*/false);
    if (!list.ok()) return list.status();
    for (const Rule& r : *list) {
      if ((r.active && r.name == ref) || r.id == ref) {
        body = RuleJson(r);
        body["status"] = RuleStatusName(r.status);
        return Status::Ok();
      }
    }
    return Status::NotFound("no rule '" + ref + "'");
  });
  if (!st.ok()) return st;
  return json{{"as_of", FormatTime(ctx.clock.Now())}, {"rule", std::move(body)}};
}

// The names of the rules in force that start with `value`, in order of name.
Result<std::vector<std::string>> CompleteRuleNames(ToolContext& ctx, const std::string& value) {
  std::vector<std::string> names;
  Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
    auto list = tx.rules().List(ctx.auth.workspace_id, /*active_only=*/true);
    if (!list.ok()) return list.status();
    for (const Rule& r : *list) names.push_back(r.name);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  std::sort(names.begin(), names.end());
  return StartingWith(names, value);
}

// One section of notification.list's answer, with its as_of.
Result<json> NotificationSection(const ToolRegistry& tools, ToolContext& ctx,
                                 const std::string& section) {
  auto body = CallReadTool(tools, "notification.list", json::object(), ctx);
  if (!body.ok()) return body.status();
  return json{{"as_of", (*body)["as_of"]}, {section, (*body)[section]}};
}

// --- completers ---

Result<std::vector<std::string>> CompleteDecisionIds(ToolContext& ctx, const std::string& value) {
  // Ids are ordered: the ids starting with `value` are one range of the index.
  DecisionFilter filter;
  if (!value.empty()) {
    filter.min_id = value;
    filter.max_id = value + "~";  // past every id character
  }
  std::vector<std::string> ids;
  Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
    auto list = tx.decisions().List(ctx.auth.workspace_id, filter,
                                    static_cast<int>(limits::kMaxCompletions) + 1);
    if (!list.ok()) return list.status();
    for (const Decision& d : *list) ids.push_back(d.id);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return ids;
}

Result<std::vector<std::string>> CompleteNotificationIds(ToolContext& ctx,
                                                         const std::string& value) {
  std::vector<std::string> ids;
  TimePoint now = ctx.clock.Now();
  Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
    auto list = tx.notifications().List(
        ctx.auth.workspace_id, std::nullopt, now - kNotificationCompletionWindow,
        now + kNotificationCompletionWindow, limits::kMaxNotificationsPerSection,
        /*newest_first=*/true);
    if (!list.ok()) return list.status();
    for (const Notification& n : *list) ids.push_back(n.id);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return StartingWith(ids, value);
}

bool WordStartsWith(const std::string& name, const std::string& value) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  std::string n = lower(name), v = lower(value);
  for (size_t at = 0; at < n.size();
       at = n.find(' ', at) == std::string::npos ? n.size() : n.find(' ', at) + 1) {
    if (n.compare(at, v.size(), v) == 0) return true;
  }
  return false;
}

// Counterparties by name (any word of it starts with `value`: the person's first
// identifier is offered), by identifier or by entity id.
Result<std::vector<std::string>> CompleteCounterparties(ToolContext& ctx,
                                                        const std::string& value) {
  std::vector<std::string> out;
  Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
    auto people = tx.entities().List(ctx.auth.workspace_id, kMaxCompletionEntities);
    if (!people.ok()) return people.status();
    std::sort(people->begin(), people->end(),
              [](const Entity& a, const Entity& b) { return a.name < b.name; });
    std::vector<std::string> by_identifier;
    for (const Entity& e : *people) {
      // Offered for a name: an email address if it has one (what a person recognises).
      std::string handle = e.identifiers.empty() ? e.id : e.identifiers.front();
      for (const std::string& i : e.identifiers) {
        if (i.find('@') != std::string::npos && i.front() != '@') {
          handle = i;
          break;
        }
      }
      if (!value.empty() && WordStartsWith(e.name, value)) out.push_back(handle);
      by_identifier.push_back(handle);
      for (const std::string& i : e.identifiers) by_identifier.push_back(i);
      by_identifier.push_back(e.id);
    }
    for (std::string& s : StartingWith(by_identifier, value)) {
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

std::vector<std::string> TriageClasses() {
  return {"interrupt_now", "surface_at_transition", "daily_digest", "handle_silently"};
}

Completer CortexCompleter() {
  return [](ToolContext& ctx, const std::string& name, const std::string& value,
            const Arguments&) -> Result<std::vector<std::string>> {
    if (name == "decision_id") return CompleteDecisionIds(ctx, value);
    if (name == "notification_id") return CompleteNotificationIds(ctx, value);
    if (name == "counterparty") return CompleteCounterparties(ctx, value);
    if (name == "triage_class") return StartingWith(TriageClasses(), value);
    if (name == "rule") return CompleteRuleNames(ctx, value);
    return std::vector<std::string>{};
  };
}

// --- prompts ---

// What is due, waiting, next and in the digest, embedded for a morning briefing.
Result<json> MorningBriefing(const ToolRegistry& tools, ToolContext& ctx) {
  json messages = json::array(
      {UserText("Give me my morning briefing from the Cortex data below. Start with what needs me "
                "now (interrupts due, drafts waiting for my approval, the most urgent first), then "
                "what surfaces at the next transition, then what today's digest will hold. Be "
                "brief; name people and say what each one wants.")});
  auto due = NotificationSection(tools, ctx, "due");
  if (!due.ok()) return due.status();
  messages.push_back(EmbeddedResource("cortex://notifications/due", *due));
  auto inbox = PendingApprovals(ctx, std::nullopt);
  if (!inbox.ok()) return inbox.status();
  messages.push_back(EmbeddedResource("cortex://inbox", *inbox));
  auto next = NotificationSection(tools, ctx, "next_transition");
  if (!next.ok()) return next.status();
  messages.push_back(EmbeddedResource("cortex://notifications/next-transition", *next));
  auto digest = NotificationSection(tools, ctx, "digest");
  if (!digest.ok()) return digest.status();
  messages.push_back(EmbeddedResource("cortex://digest", *digest));
  return json{{"description", "Morning briefing"}, {"messages", std::move(messages)}};
}

// The drafts waiting for approval (to args' counterparty only, if given), to review.
Result<json> ReviewApprovals(ToolContext& ctx, const Arguments& args) {
  std::optional<std::string> entity_id;
  std::string who;
  if (auto it = args.find("counterparty"); it != args.end() && !it->second.empty()) {
    Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
      auto e = ResolveCounterparty(tx, ctx.auth.workspace_id, it->second);
      if (!e.ok()) return e.status();
      entity_id = e->id;
      who = e->name;
      return Status::Ok();
    });
    if (st.code() == Code::kInvalidArgument && !IsIdentifierShaped(it->second)) {
      return Status::InvalidArgument("argument 'counterparty': " + st.message());
    }
    if (st.code() == Code::kNotFound || st.code() == Code::kInvalidArgument) {
      return Status::InvalidArgument("argument 'counterparty': no counterparty matches '" +
                                     it->second + "'");
    }
    if (!st.ok()) return st;
  }
  auto inbox = PendingApprovals(ctx, entity_id);
  if (!inbox.ok()) return inbox.status();
  size_t n = (*inbox)["pending"].size();
  std::string text =
      n == 0 ? "Nothing is waiting for my approval" + (who.empty() ? "" : " to " + who) +
                   ". Say so in one line."
             : "Help me review the " + std::to_string(n) + " draft" + (n == 1 ? "" : "s") +
                   " waiting for my approval" + (who.empty() ? "" : " to " + who) +
                   ", one at a time: who it is to, what it says, why Cortex proposed it, "
                   "and your recommendation (approve, edit, or reject). I decide each in "
                   "the inbox or with action.approve / action.reject.";
  json messages = json::array({UserText(std::move(text))});
  messages.push_back(EmbeddedResource("cortex://inbox", *inbox));
  return json{{"description", "Review of pending approvals"}, {"messages", std::move(messages)}};
}

// One decision (args' decision_id) as decision.inspect shows it, to explain.
Result<json> WhyDidYouDoThat(const ToolRegistry& tools, ToolContext& ctx, const Arguments& args) {
  const std::string& id = args.at("decision_id");
  auto body = CallReadTool(tools, "decision.inspect", {{"decision_id", id}}, ctx);
  if (body.status().code() == Code::kNotFound) {
    return Status::InvalidArgument("argument 'decision_id': no decision " + id +
                                   " in this workspace");
  }
  if (!body.ok()) return body.status();
  json messages =
      json::array({UserText("Explain in plain words why Cortex made decision " + id +
                            ": what it decided, the rule and signals behind it, how confident it "
                            "was, and what I could change (a rule, a trust level) if I disagree."),
                   EmbeddedResource("cortex://decisions/" + id, *body)});
  return json{{"description", "Why Cortex made " + id}, {"messages", std::move(messages)}};
}

// --- registration ---

// cortex://inbox, the sections of notification.list and cortex://rules.
Status AddFixedResources(Catalog& c, const ToolRegistry& tools) {
  CORTEX_RETURN_IF_ERROR(c.AddResource({
      .uri = "cortex://inbox",
      .name = "inbox",
      .title = "Approval inbox",
      .description = "Drafts waiting for the person's approval, newest first (at most 100): "
                     "recipient, draft, level, why, due_at.",
      .read = [](ToolContext& ctx, const std::string& uri, const Arguments&) -> Result<json> {
        auto body = PendingApprovals(ctx, std::nullopt);
        if (!body.ok()) return body.status();
        return TextContents(uri, *body);
      },
  }));
  struct Section {
    const char* uri;
    const char* name;
    const char* title;
    const char* description;
    const char* section;
  };
  for (const Section& s : {
           Section{"cortex://notifications/due", "notifications-due", "Notifications due now",
                   "Notifications that surfaced in the last 24 hours, newest first.", "due"},
           Section{"cortex://notifications/next-transition", "next-transition",
                   "Next focus-block transition",
                   "When the next held batch surfaces, and what is in it (null: nothing held).",
                   "next_transition"},
           Section{"cortex://digest", "digest", "Today's digest",
                   "What the next daily digest will list, and when it goes out.", "digest"},
       }) {
    std::string section = s.section;
    CORTEX_RETURN_IF_ERROR(c.AddResource({
        .uri = s.uri,
        .name = s.name,
        .title = s.title,
        .description = s.description,
        .read = [&tools, section](ToolContext& ctx, const std::string& uri,
                                  const Arguments&) -> Result<json> {
          auto body = NotificationSection(tools, ctx, section);
          if (!body.ok()) return body.status();
          return TextContents(uri, *body);
        },
    }));
  }
  CORTEX_RETURN_IF_ERROR(c.AddResource({
      .uri = "cortex://rules",
      .name = "rules",
      .title = "Rules in force",
      .description = "The workspace's active triage and action rules, in the order they apply.",
      .read = [](ToolContext& ctx, const std::string& uri, const Arguments&) -> Result<json> {
        auto body = RulesInForce(ctx);
        if (!body.ok()) return body.status();
        return TextContents(uri, *body);
      },
  }));
  return Status::Ok();
}

// The templates: a read tool's answer for one id, and one rule.
Status AddResourceTemplates(Catalog& c, const ToolRegistry& tools) {
  struct Template {
    const char* uri;
    const char* name;
    const char* title;
    const char* description;
    const char* tool;
    const char* variable;
    const char* argument;  // the tool's argument the variable fills
  };
  for (const Template& t : {
           Template{"cortex://decisions/{decision_id}", "decision", "A decision",
                    "Any decision Cortex made: class, reasoning, ledger linkage "
                    "(decision.inspect).",
                    "decision.inspect", "decision_id", "decision_id"},
           Template{"cortex://counterparties/{counterparty}", "counterparty", "A counterparty",
                    "A person or organisation by entity id, email, @handle or +phone "
                    "(entity.lookup).",
                    "entity.lookup", "counterparty", "identifier"},
           Template{"cortex://notifications/{notification_id}", "notification",
                    "Why a notification",
                    "Why a notification was classed as it was "
                    "(meta.why_this_notification).",
                    "meta.why_this_notification", "notification_id", "notification_id"},
           Template{"cortex://triage/{triage_class}", "triage", "Recent triage of a class",
                    "The newest 20 triage decisions of one class (interrupt_now, "
                    "surface_at_transition, daily_digest, handle_silently).",
                    "decision.list", "triage_class", "triage_class"},
       }) {
    std::string tool = t.tool, variable = t.variable, argument = t.argument;
    CORTEX_RETURN_IF_ERROR(c.AddResource({
        .uri = t.uri,
        .name = t.name,
        .title = t.title,
        .description = t.description,
        .read = [&tools, tool, variable, argument](ToolContext& ctx, const std::string& uri,
                                                   const Arguments& vars) -> Result<json> {
          auto body = CallReadTool(tools, tool, {{argument, vars.at(variable)}}, ctx);
          if (!body.ok()) return body.status();
          return TextContents(uri, *body);
        },
        .complete = CortexCompleter(),
    }));
  }
  CORTEX_RETURN_IF_ERROR(c.AddResource({
      .uri = "cortex://rules/{rule}",
      .name = "rule",
      .title = "A rule",
      .description = "One rule: the rule in force of this name (completed by "
                     "completion/complete), or any rule by its id (rul_...), with its status.",
      .read = [](ToolContext& ctx, const std::string& uri, const Arguments& vars) -> Result<json> {
        auto body = OneRule(ctx, vars.at("rule"));
        if (!body.ok()) return body.status();
        return TextContents(uri, *body);
      },
      .complete = CortexCompleter(),
  }));
  return Status::Ok();
}

Status AddPrompts(Catalog& c, const ToolRegistry& tools) {
  CORTEX_RETURN_IF_ERROR(c.AddPrompt({
      .name = "morning_briefing",
      .title = "Morning briefing",
      .description = "What is due now, what waits for approval, what the next transition "
                     "and today's digest hold.",
      .get = [&tools](ToolContext& ctx, const Arguments&) { return MorningBriefing(tools, ctx); },
  }));
  CORTEX_RETURN_IF_ERROR(c.AddPrompt({
      .name = "review_approvals",
      .title = "Review pending approvals",
      .description = "Walk through the drafts waiting for approval, one by one, optionally "
                     "only those to one counterparty.",
      .arguments = {{"counterparty",
                     "Only drafts to this person (a name, entity id, email or @handle).", false}},
      .get = ReviewApprovals,
      .complete = CortexCompleter(),
  }));
  CORTEX_RETURN_IF_ERROR(c.AddPrompt({
      .name = "why_did_you_do_that",
      .title = "Why did you do that?",
      .description = "Explain one decision: what Cortex decided, on what evidence, by which "
                     "rule, and how sure it was.",
      .arguments = {{"decision_id", "The decision (dec_...).", true}},
      .get = [&tools](ToolContext& ctx,
                      const Arguments& args) { return WhyDidYouDoThat(tools, ctx, args); },
      .complete = CortexCompleter(),
  }));
  return Status::Ok();
}

}  // namespace

Status RegisterCortexResources(ToolRegistry& registry) {
  const ToolRegistry& tools = registry;
  Catalog& c = registry.catalog();
  // Fixed resources first: cortex://notifications/due is not a notification id.
  CORTEX_RETURN_IF_ERROR(AddFixedResources(c, tools));
  CORTEX_RETURN_IF_ERROR(AddResourceTemplates(c, tools));
  return AddPrompts(c, tools);
}

}  // namespace cortex
