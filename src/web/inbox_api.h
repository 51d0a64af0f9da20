// The web inbox over HTTP: its page, its JSON API and its event stream, for the person
// signed in through `cortex inbox link`. No I/O: http_router.cc hands every request under
// /inbox/ here and sends what comes back. A session acts with its workspace's `approve`
// scope and nothing else; every state-changing request carries the session's CSRF token.
// docs/inbox.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "engines/actions/actions.h"
#include "engines/auth/signin.h"
#include "store/store.h"
#include "tools/registry.h"
#include "transport/http_types.h"

namespace cortex {

class InboxApi : public PathHandler {
 public:
  // `tools` gives the read views the page shares with MCP (notification.list,
  // decision.list); `actions` configures approvals and trust.
  InboxApi(Store& store, const Clock& clock, const ActionConfig& actions,
           const ToolRegistry& tools);

  // /inbox and everything below it.
  bool Handles(std::string_view path) const override;
  // "/inbox/api" for the JSON API, "/inbox" for the rest.
  std::string RouteOf(std::string_view path) const override;
  // The inbox session's secret the request's cookie carries, or "".
  static std::string SessionSecret(const HttpRequest& req);
  // Whether handling `req` may write (signing in, approving, rejecting, moving trust,
  // signing out).
  bool MayWrite(const HttpRequest& req) const override;

  // REQUIRES: Handles(path of req.target).
  HttpResponse Handle(const HttpRequest& req, RequestLog& log);
  HttpResponse Handle(const HttpRequest& req, const std::string& /*base_url*/,
                      RequestLog& log) override {
    return Handle(req, log);
  }
  // The event streams GET /inbox/api/events opens: "inbox:<session secret>", polled
  // through Poll.
  bool OwnsStream(std::string_view stream) const override;
  std::optional<std::string> StreamNext(const std::string& stream, std::string& state) override;

  // What an open event stream (GET /inbox/api/events) sends next: the events since its last
  // poll (empty if none), or nullopt once its session has ended. `marker` is the stream's
  // own state: where things stood at its last poll, or as it opened (HttpResponse::
  // stream_state).
  std::optional<std::string> Poll(const std::string& session_secret, std::string& marker);

 private:
  HttpResponse SignIn(const HttpRequest& req, RequestLog& log);
  HttpResponse State(const InboxAuth& auth, const std::string& secret);
  HttpResponse Approve(const InboxAuth& auth, const nlohmann::json& body, bool approve);
  HttpResponse Trust(const InboxAuth& auth, const nlohmann::json& body);
  // Disconnects an app the person connected through OAuth: revokes its token.
  HttpResponse Disconnect(const InboxAuth& auth, const nlohmann::json& body);
  // A person accepts or rejects a learned rule: {rule_id, decision: accept|reject}.
  HttpResponse DecideRule(const InboxAuth& auth, const nlohmann::json& body);
  // A marker that moves whenever what the page shows may have changed.
  Result<std::string> ChangeMarker(ReadTx& tx, const std::string& ws);

  Store& store_;
  const Clock& clock_;
  const ActionConfig& actions_;
  const ToolRegistry& tools_;
};

}  // namespace cortex
