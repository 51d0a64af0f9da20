#include "app.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/ip/address.hpp>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include "config_file.h"
#include "connectors/https_fetch.h"
#include "core/clock.h"
#include "core/limits.h"
#include "core/metrics.h"
#include "core/stop_signal.h"
#include "core/thread_name.h"
#include "core/time.h"
#include "engines/actions/idempotency.h"
#include "engines/auth/oauth.h"
#include "engines/auth/tokens.h"
#include "engines/delivery/delivery.h"
#include "engines/delivery/digest.h"
#include "engines/delivery/pushes.h"
#include "engines/sync/incoming.h"
#include "engines/tasks/task_runner.h"
#include "engines/world/ingest.h"
#include "protocol/mcp_server.h"
#include "store/actions.h"
#include "store/mcp_calls.h"
#include "store/oauth.h"
#include "store/outbox.h"
#include "store/quotas.h"
#include "store/sessions.h"
#include "store/store.h"
#include "store/workspaces.h"
#include "transport/http_router.h"
#include "transport/http_server.h"
#include "transport/stdio.h"
#include "web/inbox_api.h"
#include "web/oauth_api.h"

namespace cortex {

const char kCortexInstructions[] =
    "Cortex is the user's chief of staff: it keeps a world model of their messages, calendar "
    "blocks and counterparties, triages what comes in, and acts for them only as far as it is "
    "trusted. Every decision can be explained from stored evidence.";

namespace {

// The background work of a serving process: expire drafts, execute supervised actions
// whose undo window passed, compose the daily digests, deliver the outbox (and push events
// if a [push] webhook is configured). Overdue work is done at start.
class BackgroundWork {
 public:
  BackgroundWork(Store& store, const Clock& clock, const EngineConfig& config, Connector& connector)
      : push_(config.push.connector.empty() ? nullptr : MakeWebhookConnector(config.push)),
        actions_(store, clock, config.actions),
        dispatcher_(store, clock, connector, config.delivery, push_.get()),
        store_(store),
        clock_(clock),
        thread_([this] { Loop(); }) {
    NameThread(thread_, "cortex-dispatch");
  }
  ~BackgroundWork() {
    stop_.Stop();
    thread_.join();
  }

 private:
  static constexpr std::chrono::milliseconds kTick{200};

  void Loop() {
    do {
      try {
        auto due = actions_.ProcessDue(clock_.Now());
        if (!due.ok()) spdlog::warn("due actions: {}", due.status().message());
        ComposeDigestsOnceAMinute();
        auto sent = dispatcher_.RunOnce(clock_.Now());
        if (!sent.ok()) spdlog::warn("delivery: {}", sent.status().message());
        SweepOnceAMinute();
        UndoStrandedBatches();
      } catch (const std::exception& e) {
        spdlog::error("background work failed: {}", e.what());
      }
    } while (!stop_.WaitFor(kTick));
  }

  // A `cortex ingest` killed half way through a large batch on this data leaves its steps
  // in the store; they are undone here within seconds, not at the next start.
  void UndoStrandedBatches() {
    auto now = std::chrono::steady_clock::now();
    if (now - last_stranded_check_ < std::chrono::seconds(5)) return;
    last_stranded_check_ = now;
    auto undone = store_.UndoStrandedWrites();
    if (!undone.ok())
      spdlog::warn("undoing stranded ingest batches: {}", undone.status().message());
  }

  void ComposeDigestsOnceAMinute() {
    TimePoint now = clock_.Now();
    if (now - last_digests_ < std::chrono::minutes(1)) return;
    last_digests_ = now;
    auto composed = ComposeDueDigests(store_, clock_, now);
    if (!composed.ok()) {
      spdlog::warn("daily digests: {}", composed.status().message());
    } else if (*composed > 0) {
      spdlog::info("daily digests: {} composed", *composed);
    }
  }

  // Forgets sessions idle past their expiry, call counts of past minutes and days, pushed
  // events past their retention, idempotency keys past their lifetime, and OAuth codes and
  // refresh tokens a day past their expiry, and OAuth clients nobody consented to in a day.
  // Every instance sweeps; a sweep that collides with another's just tries next time.
  void SweepOnceAMinute() {
    TimePoint now = clock_.Now();
    if (now - last_sweep_ < std::chrono::minutes(1)) return;
    last_sweep_ = now;
    int64_t minute = ToUnixMillis(now) / 60'000;
    // Local days run up to 14 h ahead of or behind UTC: keep two days either side.
    int64_t day = ToUnixMillis(now) / 86'400'000 - 2;
    Status st = store_.Write([&](WriteTx& tx) -> Status {
      CORTEX_RETURN_IF_ERROR(tx.sessions().DeleteIdle(now - limits::kSessionIdleExpiry));
      CORTEX_RETURN_IF_ERROR(tx.calls().DeleteRoundsBefore(now));
      CORTEX_RETURN_IF_ERROR(tx.outbox().DeleteEventsBefore(now - kPushRetention));
      CORTEX_RETURN_IF_ERROR(tx.actions().DeleteIdempotentBefore(now - kIdempotencyKeyLifetime));
      // A day's grace: a code replayed just after it expired still revokes what it gave.
      CORTEX_RETURN_IF_ERROR(tx.oauth().DeleteExpiredBefore(now - std::chrono::hours(24)));
      CORTEX_RETURN_IF_ERROR(tx.oauth().DeleteUnusedClientsBefore(now - kOAuthUnusedClient));
      return tx.quotas().DeleteCallCountsBefore(minute - 1, day);
    });
    if (!st.ok()) spdlog::warn("sweeping idle sessions and old call counts: {}", st.message());
  }

  std::unique_ptr<Connector> push_;
  ActionEngine actions_;
  Dispatcher dispatcher_;
  Store& store_;
  const Clock& clock_;
  TimePoint last_sweep_{};
  std::chrono::steady_clock::time_point last_stranded_check_{};
  TimePoint last_digests_{};
  StopSignal stop_;
  std::thread thread_;  // last: starts once everything above exists
};

// Mail and calendars in while serving (docs/connectors.md): each incoming source (an
// [[connectors.imap]] or [[connectors.calendar]] account) on a thread of its own, so that a
// slow or failing server never holds up delivery or another source. A pass every
// poll_seconds, sooner when the source has news (IMAP IDLE: MailSource); a failing pass is
// retried with backoff (the poll interval doubling, at most 15 minutes). Passes go on from
// what the last one committed (IMAP's UID cursors, the calendar's record), so a drop or
// the process dying mid-pass loses nothing.
class ConnectorPoller {
 public:
  ConnectorPoller(Store& store, const Clock& clock,
                  std::vector<std::unique_ptr<IncomingSource>> sources)
      : store_(store), clock_(clock), sources_(std::move(sources)) {
    for (const auto& source : sources_) {
      threads_.emplace_back([this, s = source.get()] { Run(*s); });
      NameThread(threads_.back(), ("cortex-" + source->Kind()).c_str());
    }
  }
  ~ConnectorPoller() {
    stop_.Stop();
    for (std::thread& t : threads_) t.join();
  }

 private:
  static constexpr std::chrono::seconds kPassRetryMax{900};

  void Run(IncomingSource& source) {
    int failures = 0;
    while (!stop_.stopped()) {
      source.Watch();  // first: what arrives during the pass wakes the next one
      Pass(source, &failures);
      source.WaitForNews(std::chrono::steady_clock::now() +
                             Backoff(source.PollInterval(), failures, kPassRetryMax),
                         stop_);
    }
  }

  // One pass of `source`: its failures counted in *failures (0 after a pass that worked)
  // and logged.
  void Pass(IncomingSource& source, int* failures) {
    try {
      auto pass = source.Pass(store_, clock_, &stop_.flag());
      if (pass.ok()) {
        *failures = 0;
        if (pass->changed) spdlog::info("{}: {}", source.Name(), pass->summary);
        return;
      }
      ++*failures;
      spdlog::warn("{} (attempt {})", pass.status().message(), *failures);
    } catch (const std::exception& e) {
      ++*failures;
      spdlog::error("{}: {}", source.Name(), e.what());
    }
  }

  Store& store_;
  const Clock& clock_;
  StopSignal stop_;  // ends a long pass between batches, and a wait
  std::vector<std::unique_ptr<IncomingSource>> sources_;
  std::vector<std::thread> threads_;  // last: they start once everything above exists
};

// The learner while serving, on a thread of its own: a pass over a long history takes a
// while, and must not hold up the deliveries and digests of BackgroundWork.
class LearningWork {
 public:
  LearningWork(Store& store, const Clock& clock, const EngineConfig& config)
      : store_(store),
        clock_(clock),
        learning_serve_(config.learning_serve),
        learning_(config.learning),
        thread_([this] { Loop(); }) {
    NameThread(thread_, "cortex-learn");
  }
  ~LearningWork() {
    stop_.Stop();
    thread_.join();
  }

 private:
  void Loop() {
    if (!learning_serve_.enabled) return;
    do {
      try {
        LearnWhenSettled();
      } catch (const std::exception& e) {
        spdlog::error("learning failed: {}", e.what());
      }
    } while (!stop_.WaitFor(std::chrono::seconds(1)));
  }

  // A learning pass (docs/learning.md) for each workspace whose world has been still for
  // settle_seconds since it last changed, and for each not learned for every_hours. Checked
  // once a second; what it last saw is kept in memory (a restart learns once for every
  // workspace).
  void LearnWhenSettled() {
    TimePoint now = clock_.Now();
    std::vector<Workspace> workspaces;
    Status st = store_.Read([&](ReadTx& tx) -> Status {
      auto list = tx.workspaces().List();
      if (!list.ok()) return list.status();
      workspaces = std::move(*list);
      return Status::Ok();
    });
    if (!st.ok()) {
      spdlog::warn("learning: {}", st.message());
      return;
    }
    for (const Workspace& w : workspaces) {
      LearnState& s = learned_[w.id];
      if (w.world_version != s.seen_version) {
        s.seen_version = w.world_version;
        s.seen_at = now;
      }
      bool settled = s.learned_version != s.seen_version &&
                     now - s.seen_at >= std::chrono::seconds(learning_serve_.settle_seconds);
      bool due = s.learned_at != TimePoint{} &&
                 now - s.learned_at >= std::chrono::hours(learning_serve_.every_hours);
      if (!settled && !due) continue;
      // Not while a large ingest batch lands in the workspace: next second.
      auto pass = store_.TryEnterWorkspace(w.id);
      if (!pass) continue;
      auto report = Learn(store_, clock_, w.id, learning_, &s.memory);
      s.learned_version = s.seen_version;
      s.learned_at = now;
      if (!report.ok()) {
        spdlog::warn("learning in {}: {}", w.id, report.status().message());
      } else if (report->proposed + report->updated + report->retired > 0) {
        spdlog::info("learning in {}: {} proposed, {} updated, {} retired", w.id, report->proposed,
                     report->updated, report->retired);
      }
    }
  }

  struct LearnState {
    std::string seen_version;  // the world_version last seen, since seen_at
    TimePoint seen_at{};
    std::string learned_version;  // the world_version of the last pass, at learned_at
    TimePoint learned_at{};
    LearnMemory memory;  // the workspace's messages, for the next pass to read only the new
  };

  Store& store_;
  const Clock& clock_;
  EngineConfig::ServeLearning learning_serve_;
  LearningConfig learning_;
  std::map<std::string, LearnState> learned_;  // by workspace id
  StopSignal stop_;
  std::thread thread_;  // last: starts once everything above exists
};

struct HostPort {
  std::string host;
  uint16_t port = 0;
};

Result<HostPort> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    return Status::InvalidArgument("--listen must be HOST:PORT, got '" + listen + "'");
  }
  HostPort hp;
  hp.host = listen.substr(0, colon);
  if (hp.host.size() > 2 && hp.host.front() == '[' && hp.host.back() == ']') {
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  }
  if (hp.host == "localhost") hp.host = "127.0.0.1";
  try {
    int port = std::stoi(listen.substr(colon + 1));
    if (port < 0 || port > 65535) throw std::out_of_range("port");
    hp.port = static_cast<uint16_t>(port);
  } catch (const std::exception&) {
    return Status::InvalidArgument("--listen port must be 0-65535, got '" + listen + "'");
  }
  return hp;
}

// What `cortex serve` and `cortex mcp --stdio` both start from.
struct Startup {
  EngineConfig config;
  std::unique_ptr<Store> store;
  std::unique_ptr<Connector> connector;  // delivers the outbox
  ToolRegistry registry;
};

// Loads the config, opens the store, runs `store_opened` (serve takes its lock there, stdio
// checks its token), makes the connector and registers the tools, into *out. Returns 0, or
// the process's exit code after logging why not: that of `store_opened` if it fails.
int StartUp(const std::string& data_dir, const std::string& config_path,
            const RegisterTools& register_tools, const std::function<int(Store&)>& store_opened,
            Startup* out) {
  auto config = LoadConfig(config_path);
  if (!config.ok()) {
    spdlog::error("{}", config.status().message());
    return 2;
  }
  out->config = std::move(*config);
  auto store = OpenStore(data_dir);
  if (!store.ok()) {
    spdlog::error("cannot open store: {}", store.status().message());
    return 1;
  }
  out->store = std::move(*store);
  if (int rc = store_opened(*out->store); rc != 0) return rc;
  auto connector = MakeConnector(*out->store, ProcessClock(), out->config.delivery);
  if (!connector.ok()) {
    spdlog::error("{}", connector.status().message());
    return 2;
  }
  out->connector = std::move(*connector);
  if (Status st = register_tools(out->registry, out->config); !st.ok()) {
    spdlog::error("tool registration failed: {}", st.message());
    return 1;
  }
  return 0;
}

// The router's options for `cortex serve` listening on a loopback address or not, into
// *out. Returns 0, or 2 after logging a public URL that is not one.
int ServeRouterOptions(const ServeOptions& options, bool loopback, const EngineConfig& config,
                       RouterOptions* out) {
  out->insecure_no_auth = options.insecure_no_auth;
  out->allowed_origins = options.allowed_origins;
  out->allowed_hosts = options.allowed_hosts;
  // Host checks guard loopback servers against DNS rebinding. A server listening on a
  // public address is reached by names we cannot guess, unless the operator lists them.
  out->check_host = loopback || !options.allowed_hosts.empty();
  out->metrics_token = config.http.metrics_token;
  std::string public_url = options.base_url.empty() ? config.http.public_url : options.base_url;
  if (!public_url.empty()) {
    auto base = NormalizeBaseUrl(public_url);
    if (!base.ok()) {
      spdlog::error("{}{}", options.base_url.empty() ? "[http] public_url: " : "",
                    base.status().message());
      return 2;
    }
    out->public_url = *base;
  }
  return 0;
}

}  // namespace

RouterParts CortexRouterParts(Store& store, const Clock& clock,
                              std::vector<PathHandler*> handlers) {
  RouterParts parts;
  parts.authenticate = [&store, &clock](const std::string& secret, const std::string& resource) {
    return Authenticate(store, secret, clock, resource);
  };
  parts.ingest = [&store, &clock](const std::string& workspace_id,
                                  const std::string& body) -> Result<nlohmann::json> {
    auto report = IngestJsonl(store, clock, workspace_id, body);
    if (!report.ok()) return report.status();
    return IngestReportJson(*report, "ok");
  };
  parts.handlers = std::move(handlers);
  return parts;
}

int RunServe(const ServeOptions& options, const RegisterTools& register_tools) {
  auto hp = ParseListen(options.listen);
  if (!hp.ok()) {
    spdlog::error("{}", hp.status().message());
    return 2;
  }
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(hp->host, ec);
  if (ec) {
    spdlog::error("--listen: '{}' is not an IP address", hp->host);
    return 2;
  }
  if (options.insecure_no_auth && !address.is_loopback()) {
    spdlog::error(
        "--insecure-no-auth refuses to listen on {}: only loopback addresses are "
        "allowed without authentication",
        hp->host);
    return 2;
  }
  Startup started;
  std::optional<ServeLock> serve_lock;  // held until serve returns
  int rc = StartUp(
      options.data_dir, options.config_path, register_tools,
      [&](Store&) {
        auto lock = ServeLock::Take(options.data_dir);
        if (!lock.ok()) {
          spdlog::error("{}", lock.status().message());
          return 1;
        }
        serve_lock.emplace(std::move(*lock));
        return 0;
      },
      &started);
  if (rc != 0) return rc;
  const Clock& clock = ProcessClock();
  const EngineConfig& config = started.config;
  Store& store = *started.store;
  Connector& connector = *started.connector;
  ToolRegistry& registry = started.registry;
  AuthContext anonymous;
  if (options.insecure_no_auth) {
    auto ws = EnsureWorkspace(store, clock, options.anonymous_workspace);
    if (!ws.ok()) {
      spdlog::error("{}", ws.status().message());
      return 1;
    }
    anonymous =
        AuthContext{ws->id, ws->name, "", kScopeRead | kScopeAct | kScopeApprove | kScopeAdmin};
    spdlog::warn(
        "--insecure-no-auth: every request acts as workspace '{}' with all scopes; "
        "never use this outside tests",
        ws->name);
  }
  McpServer mcp(registry, store, clock, ServerInfo{.instructions = kCortexInstructions},
                config.actions.quotas);
  // Tools that run as tasks have a runner (stopped, failing what it ran, before `mcp` goes).
  std::unique_ptr<TaskRunner> task_runner;
  if (registry.AnyTaskSupport()) {
    task_runner = std::make_unique<TaskRunner>(
        store, clock,
        [&mcp](const McpTask& t, const std::shared_ptr<std::atomic<bool>>& c,
               const std::function<void(std::string)>& progress) {
          return mcp.RunTask(t, c, progress);
        });
    mcp.SetTaskRunner(task_runner.get());
  }
  RouterOptions router_options;
  if (int rc = ServeRouterOptions(options, address.is_loopback(), config, &router_options);
      rc != 0) {
    return rc;
  }
  mcp.SetSessionLimits(config.http.sessions);
  mcp.SetActionConfig(config.actions);
  Metrics metrics;
  InboxApi inbox(store, clock, config.actions, registry);
  HttpsFetchLimits fetch_limits;
  fetch_limits.ca_file = config.http.client_metadata_ca_file;
  fetch_limits.private_addresses = config.http.client_metadata_private_hosts;
  OAuthApi oauth(store, clock,
                 [fetch_limits](const std::string& url) { return HttpsGet(url, fetch_limits); });
  HttpRouter router(mcp, store, metrics, router_options, anonymous,
                    CortexRouterParts(store, clock, {&oauth, &inbox}));
  HttpServerOptions server_options{hp->host, hp->port, options.threads, config.http};
  // A write request may run on an I/O thread if the store suspends it while its write waits
  // (a request that may wait on the network still goes to the pool: HttpRouter::MayCallOut).
  server_options.write_fibers = store.SuspendsWrites();
  HttpServer server(router, metrics, server_options);
  auto port = server.Bind();
  if (!port.ok()) {
    spdlog::error("{}", port.status().message());
    return 1;
  }
  BackgroundWork background(store, clock, config, connector);
  ConnectorPoller connectors(store, clock, IncomingSources(config));
  LearningWork learning(store, clock, config);
  std::string shown = address.is_v6() ? "[" + hp->host + "]" : hp->host;
  spdlog::info("cortex {} listening on http://{}:{}/mcp (data: {})", CORTEX_VERSION, shown, *port,
               RedactedLocation(options.data_dir));
  server.Run();
  spdlog::info("stopped");
  return 0;
}

int RunStdio(const std::string& data_dir, const std::string& config_path, const std::string& token,
             const RegisterTools& register_tools) {
  Startup started;
  std::optional<AuthContext> auth;
  int rc = StartUp(
      data_dir, config_path, register_tools,
      [&](Store& store) {
        auto authenticated = Authenticate(store, token);
        if (!authenticated.ok()) {
          spdlog::error("CORTEX_TOKEN: {}", authenticated.status().message());
          return 1;
        }
        auth = std::move(*authenticated);
        return 0;
      },
      &started);
  if (rc != 0) return rc;
  Store& s = *started.store;
  BackgroundWork background(s, ProcessClock(), started.config, *started.connector);
  McpServer mcp(started.registry, s, ProcessClock(),
                ServerInfo{.instructions = kCortexInstructions}, started.config.actions.quotas);
  Metrics metrics;
  spdlog::info("cortex {} serving MCP on stdio for workspace '{}'", CORTEX_VERSION,
               auth->workspace_name);
  return ServeStdio(
      mcp, [&s, &token] { return Authenticate(s, token); }, metrics, std::cin, std::cout);
}

}  // namespace cortex
