#include "web/inbox_api.h"

#include <algorithm>
#include <set>

#include "core/crypto.h"
#include "core/json_text.h"
#include "core/time.h"
#include "engines/actions/trust.h"
#include "engines/auth/tokens.h"
#include "engines/learning/learning.h"
#include "engines/triage/rules.h"
#include "store/actions.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/ledger.h"
#include "store/rules.h"
#include "store/tokens.h"
#include "store/trust.h"
#include "store/workspaces.h"
#include "tools/read_tools.h"
#include "web/assets.h"

namespace cortex {

using nlohmann::json;

namespace {

constexpr char kCookie[] = "cortex_inbox";
constexpr int kMaxPending = 100;
constexpr int kRecentDecisions = 30;
constexpr int kMaxPeople = 500;
constexpr size_t kMaxBody = 64 * 1024;  // an edited draft and a little more

std::string_view PathOf(std::string_view target) { return target.substr(0, target.find('?')); }

// Headers every inbox answer carries: nothing cached, nothing framed, no referrer.
void Harden(HttpResponse& r) {
  r.headers.emplace_back("Cache-Control", "no-store");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  r.headers.emplace_back("X-Frame-Options", "DENY");
}

HttpResponse Json(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = DumpJson(body);
  Harden(r);
  return r;
}

HttpResponse Error(int status, const std::string& code, const std::string& message) {
  return Json(status, {{"status", "error"}, {"error", code}, {"message", message}});
}

HttpResponse Asset(std::string_view content_type, std::string_view body) {
  HttpResponse r;
  r.content_type = std::string(content_type);
  r.body = std::string(body);
  Harden(r);
  r.headers.emplace_back("Content-Security-Policy",
                         "default-src 'self'; base-uri 'none'; form-action 'self'; "
                         "frame-ancestors 'none'");
  return r;
}

// A page for a person who followed a link that cannot sign them in.
HttpResponse SignInRefused(const std::string& why) {
  std::string text = why;
  for (char& c : text) {
    if (c == '<' || c == '>' || c == '&') c = ' ';
  }
  HttpResponse r = Asset("text/html; charset=utf-8",
                         "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                         "<title>Sign-in refused - Cortex</title></head><body><main>"
                         "<h1>This sign-in link cannot be used</h1><p>" +
                             text +
                             ". Sign-in links work once, for 15 minutes. Ask for a new one "
                             "with <code>cortex inbox link</code>.</p></main></body></html>");
  r.status = 401;
  return r;
}

// The value of cookie `name` in the request's Cookie header, or "".
std::string CookieValue(const HttpRequest& req, std::string_view name) {
  const std::string* header = req.Header("cookie");
  if (header == nullptr) return "";
  std::string_view rest = *header;
  while (!rest.empty()) {
    size_t end = rest.find(';');
    std::string_view pair = rest.substr(0, end);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) {
      return std::string(pair.substr(eq + 1));
    }
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return "";
}

// The query parameter `name` of `target` (no percent-decoding: the link's secret is hex).
std::string QueryValue(std::string_view target, std::string_view name) {
  size_t q = target.find('?');
  if (q == std::string_view::npos) return "";
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    size_t end = rest.find('&');
    std::string_view pair = rest.substr(0, end);
    size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) {
      return std::string(pair.substr(eq + 1));
    }
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return "";
}

std::string EffectText(const Rule& r) {
  if (r.then.triage_class) return std::string(Name(*r.then.triage_class));
  std::string effect;
  auto add = [&](const std::string& s) { effect += (effect.empty() ? "" : ", ") + s; };
  if (r.then.max_level) add("at most level " + std::to_string(*r.then.max_level));
  if (r.then.block) add("block");
  if (r.then.urgent) add("urgent");
  return effect;
}

json PersonJson(const Entity& e, const EffectiveTrust& t) {
  json p = json::object();
  p["entity_id"] = e.id;
  p["name"] = e.name;
  p["identifiers"] = e.identifiers;
  p["tags"] = e.tags;
  p["trust_level"] = t.level;
  p["trust_source"] = t.source;
  p["ceiling"] = t.ceiling ? json(*t.ceiling) : json(nullptr);
  return p;
}

// The parts of the page's state (InboxApi::State) read in one transaction, each into its
// key of *out.

// "pending": the approvals waiting, with the draft and why.
Status AddPending(ReadTx& tx, const std::string& ws, json* out) {
  auto views = PendingApprovalViews(tx, ws, std::nullopt, kMaxPending);
  if (!views.ok()) return views.status();
  json pending = json::array();
  for (PendingApprovalView& v : *views) {
    json why = json::object();
    if (v.provenance) {
      const json& p = *v.provenance;
      why["summary"] = p.value("rule_summary", "");
      why["level_reason"] = p.value("level_reason", "");
      why["confidence"] = p.value("confidence", "just_guessing");
      why["contributing_episodes"] = p.value("contributing_episodes", json::array());
    }
    v.item["level_name"] = LevelName(v.item["level"].get<int>());
    v.item["why"] = std::move(why);
    pending.push_back(std::move(v.item));
  }
  (*out)["pending"] = std::move(pending);
  return Status::Ok();
}

// "people", by name, with their trust.
Status AddPeople(ReadTx& tx, const std::string& ws, const TrustConfig& trust_config, json* out) {
  auto people = tx.entities().List(ws, kMaxPeople);
  if (!people.ok()) return people.status();
  auto trust = tx.trust().List(ws);
  if (!trust.ok()) return trust.status();
  std::sort(people->begin(), people->end(),
            [](const Entity& a, const Entity& b) { return a.name < b.name; });
  json people_json = json::array();
  for (const Entity& e : *people) {
    people_json.push_back(PersonJson(e, ResolveTrust(*trust, "communicate", e, trust_config)));
  }
  (*out)["people"] = std::move(people_json);
  return Status::Ok();
}

// "rules": those in force, and the learned ones waiting for the person (docs/learning.md).
Status AddRules(ReadTx& tx, const std::string& ws, json* out) {
  auto rules = tx.rules().List(ws, /*active_only=*/false);
  if (!rules.ok()) return rules.status();
  json rules_json = json::array();
  for (const Rule& r : *rules) {
    if (r.status != RuleStatus::kActive && r.status != RuleStatus::kProposed) continue;
    rules_json.push_back({{"rule_id", r.id},
                          {"status", Name(r.status)},
                          {"name", r.name},
                          {"kind", Name(r.kind)},
                          {"summary", r.summary},
                          {"effect", EffectText(r)},
                          {"confidence", ConfidenceLabel(r, ConfidenceThresholds{})},
                          {"origin", Name(r.origin)}});
  }
  (*out)["rules"] = std::move(rules_json);
  return Status::Ok();
}

// "apps": those connected through OAuth (docs/authorization.md), which the person may
// disconnect.
Status AddApps(ReadTx& tx, const std::string& ws, json* out) {
  auto tokens = tx.tokens().List(ws);
  if (!tokens.ok()) return tokens.status();
  json apps = json::array();
  for (const TokenRecord& t : *tokens) {
    if (t.client_id.empty() || t.revoked_at) continue;
    apps.push_back({{"token_id", t.id},
                    {"client_id", t.client_id},
                    {"name", t.label},
                    {"scopes", FormatScopes(t.scopes)},
                    {"connected_at", FormatTime(t.created_at)}});
  }
  (*out)["apps"] = std::move(apps);
  return Status::Ok();
}

// Each notification of notification.list's answer gets its decision's why.
Status AddNotificationWhys(ReadTx& tx, const std::string& ws, json& notifications) {
  auto add_why = [&](json& list) -> Status {
    for (json& n : list) {
      auto d = tx.decisions().Get(ws, n.value("decision_id", ""));
      if (!d.ok()) return d.status();
      n["why"] = {{"rule_summary", d->rule_summary.value_or("")}, {"confidence", d->confidence}};
    }
    return Status::Ok();
  };
  CORTEX_RETURN_IF_ERROR(add_why(notifications["due"]));
  if (notifications["next_transition"].is_object()) {
    CORTEX_RETURN_IF_ERROR(add_why(notifications["next_transition"]["notifications"]));
  }
  return add_why(notifications["digest"]["notifications"]);
}

// A message of decision.list's answer that could not be sent says why (its ledger's failed
// entry: the SMTP server's or webhook's answer).
Status AddFailures(ReadTx& tx, const std::string& ws, json& decisions) {
  for (json& d : decisions) {
    if (d.value("status", "") != "failed" || d.value("decision_class", "") != "action_proposed") {
      continue;
    }
    auto action = tx.actions().FindByDecision(ws, d.value("decision_id", ""));
    if (!action.ok()) continue;
    auto entries = tx.ledger().ListForAction(ws, action->id);
    if (!entries.ok()) return entries.status();
    for (const LedgerEntry& e : *entries) {
      if (e.event == LedgerEvent::kFailed && e.detail.is_object() && e.detail.contains("error")) {
        d["failure"] = e.detail["error"];
      }
    }
  }
  return Status::Ok();
}

}  // namespace

InboxApi::InboxApi(Store& store, const Clock& clock, const ActionConfig& actions,
                   const ToolRegistry& tools)
    : store_(store), clock_(clock), actions_(actions), tools_(tools) {}

std::string InboxApi::SessionSecret(const HttpRequest& req) { return CookieValue(req, kCookie); }

namespace {
constexpr std::string_view kStream = "inbox:";  // an inbox stream: "inbox:<session secret>"
}  // namespace

bool InboxApi::Handles(std::string_view path) const {
  path = PathOf(path);
  return path == "/inbox" || path.rfind("/inbox/", 0) == 0;
}

std::string InboxApi::RouteOf(std::string_view path) const {
  // The inbox's pages and requests are few and fixed, but a client may name any path below.
  return PathOf(path).rfind("/inbox/api/", 0) == 0 ? "/inbox/api" : "/inbox";
}

bool InboxApi::OwnsStream(std::string_view stream) const { return stream.rfind(kStream, 0) == 0; }

std::optional<std::string> InboxApi::StreamNext(const std::string& stream, std::string& state) {
  return Poll(stream.substr(kStream.size()), state);
}

bool InboxApi::MayWrite(const HttpRequest& req) const {
  std::string_view path = PathOf(req.target);
  return path == "/inbox/signin" || req.method == "POST";
}

HttpResponse InboxApi::Handle(const HttpRequest& req, RequestLog& log) {
  std::string_view path = PathOf(req.target);
  log.status = "ok";
  if (req.method == "GET" || req.method == "HEAD") {
    if (path == "/inbox") {
      HttpResponse r;
      r.status = 308;
      r.headers.emplace_back("Location", "/inbox/");
      return r;
    }
    if (path == "/inbox/") return Asset("text/html; charset=utf-8", InboxHtml());
    if (path == "/inbox/inbox.js") return Asset("text/javascript; charset=utf-8", InboxJs());
    if (path == "/inbox/inbox.css") return Asset("text/css; charset=utf-8", InboxCss());
    if (path == "/inbox/favicon.ico") {  // none, and no error in the browser's console
      HttpResponse r;
      r.status = 204;
      return r;
    }
    // GET only: a HEAD (a link checker, a preview) must not spend the one-time link.
    if (path == "/inbox/signin" && req.method == "GET") return SignIn(req, log);
  }
  bool api = path.rfind("/inbox/api/", 0) == 0;
  if (!api) {
    log.status = "not_found";
    return Error(404, "not_found", "no such page in the inbox");
  }

  std::string secret = CookieValue(req, kCookie);
  Result<InboxAuth> auth = AuthenticateInbox(store_, clock_, secret);
  if (!auth.ok() && auth.status().code() != Code::kUnauthorized) {
    log.status = "unavailable";
    return Error(503, "unavailable", "the store cannot answer; retry");
  }
  if (!auth.ok()) {
    log.status = "unauthorized";
    return Error(401, "unauthorized",
                 auth.status().message() + ": open a new link from `cortex inbox link`");
  }
  // Never part of a large ingest batch landing in steps: it is waited for.
  WorkspaceGate::Pass pass = store_.EnterWorkspace(auth->workspace_id);

  if (req.method == "GET" && path == "/inbox/api/state") return State(*auth, secret);
  if (req.method == "GET" && path == "/inbox/api/events") {
    HttpResponse r;
    // Where things stand as the stream opens: any change after this, even before the first
    // poll, is announced.
    Status marked = store_.Read([&](ReadTx& tx) -> Status {
      auto marker = ChangeMarker(tx, auth->workspace_id);
      if (!marker.ok()) return marker.status();
      r.stream_state = std::move(*marker);
      return Status::Ok();
    });
    if (!marked.ok()) return Error(503, "unavailable", "the store cannot answer; retry");
    r.open_stream = true;
    r.stream = std::string(kStream) + secret;
    r.stream_poll = std::chrono::seconds(1);
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  }
  if (req.method != "POST") {
    log.status = "not_found";
    return Error(404, "not_found", "no such request in the inbox API");
  }
  // Every state-changing request proves it comes from the page: the session's CSRF token
  // (the cookie alone is not enough) and, if the browser names one, our own origin.
  const std::string* csrf = req.Header("x-csrf-token");
  if (csrf == nullptr || !ConstantTimeEquals(*csrf, InboxCsrfToken(secret))) {
    log.status = "csrf";
    return Error(403, "csrf", "missing or wrong X-CSRF-Token: reload the inbox");
  }
  if (req.body.size() > kMaxBody) return Error(413, "too_large", "the request body is too large");
  json body = ParseJson(req.body.empty() ? std::string_view("{}") : req.body);
  if (body.is_discarded() || !body.is_object()) {
    log.status = "invalid_arguments";
    return Error(400, "invalid_arguments", "the body must be a JSON object");
  }
  HttpResponse r;
  if (path == "/inbox/api/approve") {
    r = Approve(*auth, body, /*approve=*/true);
  } else if (path == "/inbox/api/reject") {
    r = Approve(*auth, body, /*approve=*/false);
  } else if (path == "/inbox/api/trust") {
    r = Trust(*auth, body);
  } else if (path == "/inbox/api/disconnect") {
    r = Disconnect(*auth, body);
  } else if (path == "/inbox/api/rule") {
    r = DecideRule(*auth, body);
  } else if (path == "/inbox/api/signout") {
    Status st = SignOutInbox(store_, clock_, *auth);
    r = st.ok() ? Json(200, {{"status", "success"}}) : Error(503, "unavailable", st.message());
    r.headers.emplace_back("Set-Cookie", std::string(kCookie) +
                                             "=; Path=/inbox; Max-Age=0; HttpOnly; "
                                             "SameSite=Strict");
  } else {
    r = Error(404, "not_found", "no such request in the inbox API");
  }
  if (r.status != 200) log.status = "error";
  return r;
}

HttpResponse InboxApi::Disconnect(const InboxAuth& auth, const json& body) {
  auto id = body.find("token_id");
  if (id == body.end() || !id->is_string()) {
    return Error(400, "invalid_arguments", "token_id (a connected app's tok_...) is required");
  }
  std::optional<HttpResponse> refused;
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    refused.reset();
    auto token = tx.tokens().Get(auth.workspace_id, id->get<std::string>());
    // Only apps connected through OAuth: a `ctk_` token is the operator's, revoked by the CLI.
    if ((!token.ok() && token.status().code() == Code::kNotFound) ||
        (token.ok() && (token->client_id.empty() || token->revoked_at))) {
      refused = Error(404, "not_found", "no connected app with that token_id");
      return Status::Ok();
    }
    if (!token.ok()) return token.status();
    return tx.tokens().Revoke(auth.workspace_id, token->id, clock_.Now());
  });
  if (!st.ok()) return Error(503, "unavailable", "the store cannot answer; retry");
  if (refused) return *refused;
  return Json(200, {{"status", "success"}});
}

HttpResponse InboxApi::SignIn(const HttpRequest& req, RequestLog& log) {
  std::string secret = QueryValue(req.target, "t");
  auto signed_in = RedeemSignInLink(store_, clock_, secret);
  if (!signed_in.ok()) {
    log.status = signed_in.status().code() == Code::kUnauthorized ? "unauthorized" : "error";
    if (signed_in.status().code() != Code::kUnauthorized) {
      return Error(503, "unavailable", "the store cannot answer; retry the link");
    }
    return SignInRefused(signed_in.status().message());
  }
  // Land on the page with no secret left in the address bar (or in a Referer).
  HttpResponse r;
  r.status = 303;
  r.headers.emplace_back("Location", "/inbox/");
  Harden(r);
  auto max_age = std::chrono::duration_cast<std::chrono::seconds>(kInboxSessionLifetime).count();
  r.headers.emplace_back("Set-Cookie", std::string(kCookie) + "=" + signed_in->secret +
                                           "; Path=/inbox; Max-Age=" + std::to_string(max_age) +
                                           "; HttpOnly; SameSite=Strict" +
                                           (signed_in->secure ? "; Secure" : ""));
  return r;
}

HttpResponse InboxApi::State(const InboxAuth& auth, const std::string& secret) {
  json out = json::object();
  out["workspace"] = auth.workspace_name;
  out["csrf_token"] = InboxCsrfToken(secret);
  out["as_of"] = FormatTime(clock_.Now());
  AuthContext reader{auth.workspace_id, auth.workspace_name, "", kScopeRead};
  Status st = store_.Read([&](ReadTx& tx) -> Status {
    const std::string& ws = auth.workspace_id;
    CORTEX_RETURN_IF_ERROR(AddPending(tx, ws, &out));
    CORTEX_RETURN_IF_ERROR(AddPeople(tx, ws, actions_.trust, &out));
    CORTEX_RETURN_IF_ERROR(AddRules(tx, ws, &out));
    return AddApps(tx, ws, &out);
  });
  if (!st.ok()) return Error(503, "unavailable", "the store cannot answer; retry");

  // Notifications and recent decisions: the views MCP clients get, each with its why.
  ToolContext ctx{reader, store_, clock_, "", nullptr, [](json) {}};
  ToolReply notes = tools_.Call("notification.list", json::object(), ctx);
  ToolReply recent = tools_.Call("decision.list", {{"limit", kRecentDecisions}}, ctx);
  if (notes.is_error() || recent.is_error()) {
    return Error(503, "unavailable", "the inbox could not read its notifications; retry");
  }
  json notifications = notes.body();
  st = store_.Read(
      [&](ReadTx& tx) { return AddNotificationWhys(tx, auth.workspace_id, notifications); });
  if (!st.ok()) return Error(503, "unavailable", "the store cannot answer; retry");
  out["notifications"] = std::move(notifications);
  json decisions = recent.body().value("decisions", json::array());
  st = store_.Read([&](ReadTx& tx) { return AddFailures(tx, auth.workspace_id, decisions); });
  if (!st.ok()) return Error(503, "unavailable", "the store cannot answer; retry");
  out["decisions"] = std::move(decisions);
  return Json(200, out);
}

HttpResponse InboxApi::Approve(const InboxAuth& auth, const json& body, bool approve) {
  auto text = [&](const char* key) -> std::optional<std::string> {
    if (!body.contains(key) || body[key].is_null()) return std::nullopt;
    return body[key].is_string() ? std::optional(body[key].get<std::string>()) : std::nullopt;
  };
  std::optional<std::string> id = text("decision_id");
  if (!id || id->rfind("dec_", 0) != 0 || id->size() > 64) {
    return Error(400, "invalid_arguments", "field 'decision_id': a dec_ id is required");
  }
  const char* field = approve ? "message" : "reason";
  std::optional<std::string> words = text(field);
  if (body.contains(field) && !body[field].is_null() && !words) {
    return Error(400, "invalid_arguments", std::string("field '") + field + "' must be text");
  }
  if (words && (words->empty() || words->size() > 10000 || !IsValidUtf8(*words))) {
    return Error(400, "invalid_arguments",
                 std::string("field '") + field + "' must be 1-10000 characters of text");
  }
  ActionEngine engine(store_, clock_, actions_);
  Actor by{"web", "", auth.session_id};
  auto r = approve ? engine.Approve(auth.workspace_id, *id, words, by)
                   : engine.Reject(auth.workspace_id, *id, words, by);
  if (!r.ok()) {
    const Status& st = r.status();
    switch (st.code()) {
      case Code::kConflict:
        return Error(409, "not_pending", st.message());
      case Code::kNotFound:
        return Error(404, "not_found", st.message());
      case Code::kInvalidArgument:
        return Error(400, "invalid_arguments", st.message());
      default:
        return Error(503, "unavailable", "nothing changed (" + st.message() + "); retry");
    }
  }
  return Json(200, {{"status", Name(r->outcome)},
                    {"decision_id", r->decision_id},
                    {"action_id", r->action_id},
                    {"message", r->message}});
}

HttpResponse InboxApi::Trust(const InboxAuth& auth, const json& body) {
  if (!body.contains("entity_id") || !body["entity_id"].is_string() ||
      body["entity_id"].get<std::string>().rfind("entity_", 0) != 0) {
    return Error(400, "invalid_arguments", "field 'entity_id': an entity_ id is required");
  }
  if (!body.contains("level") || !body["level"].is_number_integer() || body["level"] < 0 ||
      body["level"] > 3) {
    return Error(400, "invalid_arguments", "field 'level': 0 (off) to 3 (autonomous)");
  }
  std::string entity_id = body["entity_id"];
  int level = body["level"];
  std::optional<Decision> moved;
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    auto d =
        SetTrustByPerson(tx, clock_, auth.workspace_id, "communicate", "entity:" + entity_id, level,
                         std::nullopt, actions_.trust, Actor{"web", "", auth.session_id});
    if (!d.ok()) return d.status();
    moved = std::move(*d);
    return Status::Ok();
  });
  if (st.code() == Code::kNotFound) {
    return Error(404, "not_found", "no counterparty " + entity_id + " in this workspace");
  }
  if (st.code() == Code::kInvalidArgument) return Error(400, "invalid_arguments", st.message());
  if (!st.ok()) return Error(503, "unavailable", "nothing changed (" + st.message() + "); retry");
  return Json(200, {{"entity_id", entity_id},
                    {"trust_level", level},
                    {"decision_id", moved->id},
                    {"message", moved->payload_summary}});
}

HttpResponse InboxApi::DecideRule(const InboxAuth& auth, const json& body) {
  if (!body.contains("rule_id") || !body["rule_id"].is_string() ||
      body["rule_id"].get<std::string>().rfind("rul_", 0) != 0) {
    return Error(400, "invalid_arguments", "field 'rule_id': a rul_ id is required");
  }
  if (!body.contains("decision") ||
      (body["decision"] != "accept" && body["decision"] != "reject")) {
    return Error(400, "invalid_arguments", "field 'decision': accept or reject");
  }
  std::string id = body["rule_id"];
  bool accept = body["decision"] == "accept";
  auto r = accept ? AcceptRule(store_, clock_, auth.workspace_id, id)
                  : RejectRule(store_, clock_, auth.workspace_id, id);
  if (!r.ok()) {
    const Status& st = r.status();
    switch (st.code()) {
      case Code::kConflict:
        return Error(409, "conflict", st.message());
      case Code::kNotFound:
        return Error(404, "not_found", "no rule " + id + " in this workspace");
      case Code::kInvalidArgument:
        return Error(400, "invalid_arguments", st.message());
      default:
        return Error(503, "unavailable", "nothing changed (" + st.message() + "); retry");
    }
  }
  return Json(200, {{"rule_id", r->id},
                    {"status", Name(r->status)},
                    {"message", (accept ? "Accepted: " : "Rejected: ") + r->summary}});
}

Result<std::string> InboxApi::ChangeMarker(ReadTx& tx, const std::string& ws) {
  // New decisions (proposals, triage, trust moves) and ledger entries (approvals,
  // deliveries) cover everything the page shows; the versions cover rules and people.
  auto w = tx.workspaces().Get(ws);
  if (!w.ok()) return w.status();
  auto anchor = tx.ledger().Anchor(ws);
  if (!anchor.ok()) return anchor.status();
  auto newest = tx.decisions().List(ws, DecisionFilter{}, 1);
  if (!newest.ok()) return newest.status();
  return w->world_version + "." + w->agent_version + "." + std::to_string(anchor->first) + "." +
         (newest->empty() ? "" : newest->front().id);
}

std::optional<std::string> InboxApi::Poll(const std::string& secret, std::string& marker) {
  std::optional<std::string> events;
  Status st = store_.Read([&](ReadTx& tx) -> Status {
    auto auth = AuthenticateInbox(tx, clock_, secret);
    if (!auth.ok()) return auth.status();
    auto now = ChangeMarker(tx, auth->workspace_id);
    if (!now.ok()) return now.status();
    events = "";
    if (*now != marker) {
      marker = *now;
      *events = "event: changed\ndata: " + DumpJson({{"marker", marker}}) + "\n\n";
    }
    return Status::Ok();
  });
  if (st.code() == Code::kUnauthorized) return std::nullopt;  // signed out or expired
  if (!st.ok()) return std::string();  // the store is busy: try again at the next poll
  return events;
}

}  // namespace cortex
