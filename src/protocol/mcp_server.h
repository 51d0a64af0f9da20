// The MCP protocol layer: takes one client message (already authenticated by the
// transport), picks the protocol era, and answers it. Does no I/O; transports (HTTP, stdio)
// are thin adapters around Handle().
//
// Two eras share one endpoint:
//  - session era (2025-11-25, 2025-06-18, 2025-03-26): `initialize` opens a session whose id
//    the client sends back (Mcp-Session-Id on HTTP; implicit on stdio);
//  - stateless era (2026-07-28): every request carries its version and client capabilities
//    in params._meta; on HTTP the Mcp-* headers must mirror the body.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/clock.h"
#include "core/limits.h"
#include "engines/actions/actions.h"
#include "engines/auth/quotas.h"
#include "engines/auth/tokens.h"
#include "engines/tasks/task_runner.h"
#include "protocol/jsonrpc.h"
#include "store/store.h"
#include "tools/registry.h"

namespace cortex {

inline constexpr const char* kModernVersion = "2026-07-28";
// A held tools/call stream that AskClient opened: "ask:<the call, as JSON>".
inline constexpr std::string_view kAskStream = "ask:";
// Session-era versions we accept, newest first.
inline constexpr const char* kLegacyVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

enum class McpTransport { kHttp, kStdio };

// How the transport should deliver the answer. HTTP maps these to statuses; stdio only
// writes the body, if any.
enum class Disposition {
  kReply,           // a JSON-RPC response (result, or an error about the method's work)
  kAccepted,        // a notification or client response: nothing to send back
  kRejected,        // the message itself was refused (malformed, unsupported, mismatched)
  kUnknownMethod,   // stateless era: the method does not exist
  kUnknownSession,  // session era: no such session (expired, deleted, or not yours)
  kUnavailable,     // the store cannot answer now, or no session can be opened: retry later
  kLimited,         // over a cap of the caller's own (its workspace's or token's sessions)
};

// A JSON-RPC error and how to deliver it.
struct RpcFailure {
  rpc::Error error;
  Disposition disposition = Disposition::kReply;
};

struct McpRequest {
  std::string_view body;
  McpTransport transport = McpTransport::kHttp;
  const AuthContext* auth = nullptr;  // REQUIRES: non-null
  // HTTP request headers, when present. Ignored on stdio.
  std::optional<std::string> protocol_version_header;
  std::optional<std::string> method_header;
  std::optional<std::string> name_header;
  // The session this message belongs to (Mcp-Session-Id on HTTP; kept by the stdio loop).
  std::optional<std::string> session_id;
  // The client takes an event stream in answer (Accept: text/event-stream, HTTP only): a
  // 2025-11-25 tools/call may then send it requests (elicitation) before its result.
  bool accepts_stream = false;
  // For a long-running tool's call (ToolDef::long_running; McpServer::LongRunningCall):
  // where its notifications go while it runs (an SSE event on the call's HTTP response
  // stream, a line on stdio), instead of McpResponse::notifications. Null: collected.
  std::function<void(const nlohmann::json&)> live_notify;
  // Set by the transport when the client gives such a call up by going away (its HTTP
  // connection closed). The server sets it too, for a notifications/cancelled naming it.
  std::shared_ptr<std::atomic<bool>> cancelled;
};

struct McpResponse {
  Disposition disposition = Disposition::kReply;
  nlohmann::json body;  // null: no body
  // Request-scoped notifications emitted while handling (progress, log messages), to be
  // sent before `body` when the response is a stream.
  std::vector<nlohmann::json> notifications;
  std::string new_session_id;  // non-empty after a successful initialize
  // A 2025-11-25 tools/call that asks the user first: `requests` (elicitation/create) go
  // out on its event stream, which stays open as `held_stream` (StreamNext) until the
  // answer's result can follow; `body` is null then.
  std::vector<nlohmann::json> requests;
  std::string held_stream;
  std::string held_stream_state;  // the held stream's state to start from (StreamNext)
  // True when body is a tools/call result whose content[0].text is its structuredContent
  // as JSON text (every tool reply but a raw one): DumpBody() writes that text again rather
  // than serializing the body a second time.
  bool text_is_structured = false;
  // For the request log and metrics.
  std::string method;
  std::string tool;
  std::string status = "ok";  // "ok", a JSON-RPC error name, or a tool error code
  std::string trace_id;
};

// The response's body as JSON text, for the transports.
std::string DumpBody(const McpResponse& response);

struct ServerInfo {
  std::string name = "cortex";
  std::string title = "Cortex";
  std::string version = CORTEX_VERSION;
  std::string instructions;
};

class McpServer {
 public:
  // `quotas`: the default limits on tool calls (workspaces may override them).
  McpServer(const ToolRegistry& tools, Store& store, const Clock& clock, ServerInfo info,
            QuotaLimits quotas = {});

  // The caps on open HTTP sessions. Set before the first Handle() (not synchronized).
  void SetSessionLimits(const SessionLimits& limits) { session_limits_ = limits; }
  // The action engine's settings, for answers to our elicitation requests (approvals).
  // Set before the first Handle() (not synchronized).
  void SetActionConfig(const ActionConfig& config) { actions_ = config; }

  // The runner of tools that support tasks (engines/tasks/task_runner.h); null: such tools
  // answer at once (and one that requires a task is refused). Set before the first
  // Handle() (not synchronized).
  void SetTaskRunner(TaskRunner* runner) { runner_ = runner; }
  // Runs task `task`'s tool once, for the runner (its TaskJob): the call as its token made
  // it, with its answers so far; stops once `*cancelled` is set; its progress reports go to
  // `progress`.
  TaskOutcome RunTask(const McpTask& task, const std::shared_ptr<std::atomic<bool>>& cancelled,
                      const std::function<void(std::string)>& progress);
  // Answers one message. Thread-safe.
  McpResponse Handle(const McpRequest& req);

  // Session era, HTTP. Sessions live in the store, so any instance serves any session.
  // Both return false for an unknown session or one that belongs to a different workspace
  // (the caller cannot tell the two apart).
  // SessionExists also refreshes the session's last use. An error means the store could
  // not answer (not that the session is gone).
  // `found`, if given, receives the session.
  Result<bool> SessionExists(const std::string& id, const AuthContext& auth,
                             McpSession* found = nullptr);
  Result<bool> EndSession(const std::string& id, const AuthContext& auth);
  bool HasSession(const std::string& id);
  // What session `id`'s GET /mcp stream sends next: notifications/resources/updated for each
  // subscribed resource whose content changed since the last poll (`state` keeps a digest of
  // each, empty at first), empty if none; nullopt once the session is gone. Polled every
  // limits::kSubscriptionPoll. Any instance can serve it (subscriptions are in the store).
  std::optional<std::string> SessionStreamNext(const std::string& id, std::string& state);
  // Whether tool `name` only reads (unknown names: false).
  bool IsReadOnlyTool(std::string_view name) const { return tools_.IsReadOnly(name); }
  // Whether a tools/call whose Mcp-Name header is `name_header` (null: none) may wait on
  // the network (ToolDef::calls_out). The header is decoded as the request's own check
  // decodes it (=?base64?...?=); a name that is absent, malformed or no tool's counts as any
  // tool's: such a call is refused before a handler runs, and must not be waved through.
  bool ToolCallMayCallOut(const std::string* name_header) const;
  // Whether a request (`body`, not yet parsed; `name_header`: its Mcp-Name, or null) may
  // call a long-running tool (ToolDef::long_running): the transport runs it off its I/O
  // threads, with McpRequest::live_notify and cancelled. A known tool's name in the header
  // decides; otherwise whether the body names such a tool as a JSON string.
  bool LongRunningCall(const std::string* name_header, std::string_view body) const;
  // Counts a GET /mcp stream of session `id` (streams are connections to this process):
  // false if it already has limits::kMaxStreamsPerSession streams open here.
  // REQUIRES: SessionExists(id, caller) said true.
  bool OpenStream(const std::string& id);
  void CloseStream(const std::string& id);
  // Whether `stream` is a tools/call held open for the user's answer (McpResponse::
  // held_stream), and what to send on it next: the call's result once there is one (then
  // nullopt: the stream ends), empty while it waits. Any instance can serve it.
  static bool IsHeldStream(std::string_view stream);
  static constexpr std::chrono::milliseconds kHeldStreamPoll{250};  // how often it looks
  std::optional<std::string> HeldStreamNext(const std::string& stream, std::string& state);
  // subscriptions/listen (2026-07-28): the request's response stream is held open
  // (McpResponse::held_stream) after its acknowledgement (on stdio, the stdio loop holds it).
  // Whether `stream` is one, and what it sends next: notifications/resources/updated, tagged with
  // the subscription id, for each listened resource whose content changed since the last look
  // (empty if none); nullopt once the caller's token is revoked or expired (the stream ends).
  // Polled every limits::kSubscriptionPoll; any instance can serve it (it reads the store).
  static bool IsListenStream(std::string_view stream);
  std::optional<std::string> ListenStreamNext(const std::string& stream, std::string& state);
  // What a listen stream sends last when the server ends it (shutdown): its request's
  // result, the graceful end (SSE).
  std::string ListenStreamEnd(const std::string& stream) const;
  // The transport closed listen stream `stream` (it no longer counts against its workspace).
  void ListenClosed(const std::string& stream);

 private:
  // A long-running tool's call while it runs (protocol/mcp_long.cc): its cancellation
  // flag, registered under the request's id for notifications/cancelled to find, and where
  // its notifications go. Empty (no flag) for any other call.
  struct LongCall {
    McpServer* server = nullptr;
    std::string key;  // in running_; empty: not registered
    std::shared_ptr<std::atomic<bool>> cancelled;
    std::function<void(const nlohmann::json&)> notify;
    LongCall() = default;
    LongCall(const LongCall&) = delete;
    LongCall& operator=(const LongCall&) = delete;
    ~LongCall();
    bool Cancelled() const { return cancelled && cancelled->load(); }
  };
  // Starts `call` for a tools/call request `id` (`params`), if its tool is long-running.
  void StartLongCall(const McpRequest& req, const nlohmann::json& id, const nlohmann::json& params,
                     bool modern, LongCall& call);
  // notifications/cancelled (`params`): the long call it names, if running here, is
  // cancelled.
  void CancelLongCall(const McpRequest& req, const nlohmann::json& params, bool modern);
  // What the key of request `id` is in running_ ("": a call that notifications/cancelled
  // does not name: a 2026-07-28 HTTP call is cancelled by closing its stream).
  static std::string LongCallKey(const McpRequest& req, const nlohmann::json& id, bool modern);
  // A cancelled call's answer: none (HTTP 202 if the client still listens).
  static McpResponse Unanswered(McpResponse out);

  // Session `id` if it exists and has not expired (of any workspace).
  Result<std::optional<McpSession>> LiveSession(const std::string& id);
  McpResponse HandleModern(const McpRequest& req, const nlohmann::json& id,
                           const std::string& method, const nlohmann::json& params,
                           bool is_notification, McpResponse out);
  McpResponse HandleLegacy(const McpRequest& req, const nlohmann::json& id,
                           const std::string& method, const nlohmann::json& params,
                           bool is_notification, McpResponse out);
  // The session era's initialize.
  McpResponse LegacyInitialize(const McpRequest& req, const nlohmann::json& id,
                               const nlohmann::json& params, bool is_notification, McpResponse out);
  // Why a session-era message (not initialize) is refused: no session, an unknown one, a
  // protocol version header of the other era; nullopt if it is not, with its session in
  // *session (on HTTP).
  std::optional<RpcFailure> LegacySessionRefusal(const McpRequest& req, McpSession* session);
  // The session era's tools/call in `session`.
  McpResponse LegacyCallTool(const McpRequest& req, const nlohmann::json& id,
                             const nlohmann::json& params, const McpSession& session,
                             McpResponse out);
  // Opens a session: on HTTP in the store, within session_limits_; on stdio the process's
  // own, in no store and under no cap (the stdio loop holds its id).
  std::variant<nlohmann::json, RpcFailure> Initialize(const nlohmann::json& params,
                                                      const AuthContext& auth,
                                                      McpTransport transport, McpResponse& out);
  // tools/call for either era (`modern`: 2026-07-28, where a tool may answer that it needs
  // input, and the client's capabilities are in _meta; `session_elicits`: the 2025-11-25
  // session's client declared elicitation). Fills out.tool and out.status.
  // `answers`: a 2025-11-25 call run again with its client's answers to the requests it
  // sent ({inputResponses, requestState}); not counted against quotas a second time.
  std::variant<nlohmann::json, RpcFailure> CallTool(
      const nlohmann::json& params, const AuthContext& auth, McpResponse& out, bool modern,
      bool session_elicits = false, int log_threshold = -1, const nlohmann::json* answers = nullptr,
      bool before_task = false, const LongCall* long_call = nullptr);
  // resources/*, prompts/* and completion/complete for either era; nullopt if `method` is
  // none of them.
  std::optional<std::variant<nlohmann::json, RpcFailure>> CatalogMethod(
      const std::string& method, const nlohmann::json& params, const AuthContext& auth,
      McpResponse& out, bool modern);
  // logging/setLevel in a 2025-11-25 session.
  std::variant<nlohmann::json, RpcFailure> SetLogLevel(const McpRequest& req,
                                                       const nlohmann::json& params);
  // The capabilities of initialize and server/discover (`subscribe`: resources/subscribe
  // is served: HTTP sessions, whose GET stream carries the updates).
  nlohmann::json Capabilities(bool subscribe = false) const;
  // resources/subscribe and resources/unsubscribe in a 2025-11-25 HTTP session.
  std::variant<nlohmann::json, RpcFailure> Subscription(const McpRequest& req,
                                                        const std::string& method,
                                                        const nlohmann::json& params);
  // subscriptions/listen: the acknowledgement now, the stream held for the updates.
  McpResponse Listen(const McpRequest& req, const nlohmann::json& id, const nlohmann::json& params,
                     McpResponse out);
  // Reads each of `uris` as workspace `ws` and returns the events (SSE) of those whose
  // content, less its `as_of`, differs from its digest in `state` (a JSON object of digests,
  // empty at first: nothing is told until a resource has been seen once); updates `state`.
  // `subscription_id`, if not null, tags each notification's _meta. Empty, `state` kept,
  // while a large ingest batch of the workspace lands.
  std::string ResourceChanges(const std::string& ws, const std::vector<std::string>& uris,
                              std::string& state, const nlohmann::json& subscription_id);
  // A 2025-11-25 input-required tool result, sent as its elicitation/create request on a
  // held stream.
  McpResponse HoldForAnswer(const AuthContext& auth, const nlohmann::json& id,
                            const nlohmann::json& input_required, McpResponse out);
  // A client's response to our elicitation/create request, or to a request AskClient sent.
  McpResponse TakeAnswer(const McpRequest& req, const rpc::Message& msg, McpResponse out);
  // Any other 2025-11-25 input-required tool result (protocol/mcp_ask.cc): its input
  // requests go to the client on the call's held stream, a round kept in the store; once
  // every one is answered the tool runs again with the answers (and its request state),
  // and its result, or its next round of requests, follows on the same stream.
  McpResponse AskClient(const McpRequest& req, const nlohmann::json& id,
                        const nlohmann::json& params, const nlohmann::json& input_required,
                        bool elicits, int log_threshold, McpResponse out);
  // Records a client's response to request `rpc_id` ("creq_.../key"): false if the id is
  // not one of ours.
  bool TakeClientResponse(const McpRequest& req, const rpc::Message& msg, McpResponse& out);
  // Whether the HTTP session a client's response came in is live and the caller's; if not,
  // `out` is the refusal (session not found, or unavailable when the store cannot tell).
  // REQUIRES: req.session_id and req.auth are set.
  bool ResponderSessionLive(const McpRequest& req, McpResponse& out);
  // HeldStreamNext for a stream AskClient opened.
  std::optional<std::string> AskStreamNext(const std::string& stream, std::string& state);
  // Stores a round of `input_requests` for the call (AskClient's): the requests to send.
  Result<std::vector<nlohmann::json>> StartRound(const nlohmann::json& call,
                                                 const nlohmann::json& input_requests,
                                                 std::string& round_id);
  // Tasks (protocol/mcp_tasks.cc). Whether a 2026-07-28 request's client capabilities
  // declare the tasks extension.
  static bool DeclaresTasks(const nlohmann::json& params);
  // Replaces tools/call `result` of tool `tool` with a CreateTaskResult when the client
  // takes tasks (`modern`: declared the extension; else asked with `task`) and the result
  // leaves a draft waiting for approval: whether it did.
  bool MaybeTask(const nlohmann::json& params, const AuthContext& auth, const std::string& tool,
                 nlohmann::json& result, bool modern);
  // tasks/get, tasks/cancel, and tasks/update (2026-07-28) or tasks/result (2025-11-25);
  // nullopt if `method` is none of them. A 2025-11-25 tasks/result of a task still
  // waiting sets out.held_stream (TaskStreamNext) and answers null.
  std::optional<std::variant<nlohmann::json, RpcFailure>> TaskMethod(
      const std::string& method, const nlohmann::json& params, const AuthContext& auth, bool modern,
      const McpRequest& req, const nlohmann::json& rpc_id, McpResponse& out);
  // A 2026-07-28 tools/call of a tool that supports tasks: its task started on runner_
  // (a CreateTaskResult), a round of input before it (ToolDef::before_task), or the
  // refusal of a tool that requires a task from a client without the extension; nullopt
  // when the call runs at once instead (CallTool).
  std::optional<std::variant<nlohmann::json, RpcFailure>> StartTask(const nlohmann::json& params,
                                                                    const AuthContext& auth,
                                                                    McpResponse& out);
  static bool IsTaskStream(std::string_view stream);
  std::optional<std::string> TaskStreamNext(const std::string& stream, std::string& state);
  // Counts a tool call against the caller's quotas: null if admitted, else the
  // quota_exceeded (or store error) result to return instead.
  nlohmann::json AdmitCall(const AuthContext& auth);

  const ToolRegistry& tools_;
  TaskRunner* runner_ = nullptr;
  Store& store_;
  const Clock& clock_;
  ServerInfo info_;
  const nlohmann::json server_info_;  // {name, title, version}, built once
  const nlohmann::json result_meta_;  // every 2026-07-28 result's _meta
  QuotaLimits quota_defaults_;
  CallQuotas call_quotas_;
  SessionLimits session_limits_;
  ActionConfig actions_;

  std::mutex stdio_mu_;
  std::string stdio_log_level_;  // the stdio session's (a process serves one)

  std::mutex streams_mu_;
  std::unordered_map<std::string, size_t> streams_;  // open GET /mcp streams per session
  std::unordered_map<std::string, size_t> listens_;  // open listen streams per workspace

  std::mutex running_mu_;  // long-running calls under way here, by LongCallKey
  std::unordered_map<std::string, std::shared_ptr<std::atomic<bool>>> running_;
};

}  // namespace cortex
