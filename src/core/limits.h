// Every bound the server enforces, named in one place. docs/limits.md explains each.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace cortex::limits {

// HTTP transport.
inline constexpr size_t kMaxRequestBodyBytes = 1 << 20;    // 1 MiB per MCP request
inline constexpr size_t kMaxIngestBodyBytes = 32 << 20;    // 32 MiB per POST /v1/episodes
inline constexpr size_t kMaxHeaderBytes = 16 << 10;        // all request headers together
inline constexpr std::chrono::seconds kReadTimeout{30};    // to receive one whole request
inline constexpr std::chrono::seconds kIdleTimeout{60};    // keep-alive between requests
inline constexpr std::chrono::seconds kShutdownGrace{10};  // SIGTERM: finish in-flight work
inline constexpr size_t kMaxConnections = 1024;            // open connections per server
// Open connections from one client address: no one address can take the whole server (a
// quarter of it by default). At either bound a new connection first closes the longest-idle
// connection in its scope (its own address's; any), and is refused only if none is idle.
inline constexpr size_t kMaxConnectionsPerAddress = 256;
inline constexpr std::chrono::seconds kSseKeepAlive{15};  // comment line on idle streams
inline constexpr size_t kMaxFloodAddresses = 65536;       // client addresses tracked at once
// How often each I/O thread checks its connections' read, write and idle deadlines: a
// timeout takes effect up to this much late.
inline constexpr std::chrono::milliseconds kDeadlineSweep{250};
// Arrays and objects nested in one JSON text (a request body, an ingest line): deeper is not
// parsed. Nothing Cortex reads nests past a handful; the limit bounds the stack that code
// walking a parsed document recursively may need (a write request's fiber has 1 MiB).
inline constexpr int kMaxJsonDepth = 128;
// Requests that may write and cannot wait as fibers (below) run on a pool of this many
// threads, off the I/O threads, so that many writes can wait for one group commit together
// (up to this many of them per commit).
inline constexpr int kWriteThreads = 64;
// A write request waiting as a fiber on its I/O thread (transport/http_server.cc) has a
// stack of this size: only the pages it touches take memory, and a guard page below turns
// an overflow into a crash rather than a corruption. Each I/O thread keeps up to
// kKeptFiberStacks of them for reuse (mapping a fresh one and faulting its pages in would
// cost more than the hand-off a fiber saves). A write request whose body is larger than
// kMaxFiberBodyBytes goes to the pool even so: parsing it (a big ingest batch) would hold up
// the I/O thread's other connections.
inline constexpr size_t kFiberStackBytes = 1 << 20;
inline constexpr size_t kKeptFiberStacks = 64;
inline constexpr size_t kMaxFiberBodyBytes = 16 << 10;

// MCP sessions (protocol 2025-11-25 and earlier) over HTTP; stdio's one session is the
// process's own and counts against none of these. Open = used within kSessionIdleExpiry.
inline constexpr size_t kMaxSessions = 10000;             // in the store, all workspaces
inline constexpr size_t kMaxSessionsPerWorkspace = 1000;  // so that ten tenants fill it, not one
inline constexpr size_t kMaxSessionsPerToken = 250;       // a token's clients, within that
inline constexpr std::chrono::hours kSessionIdleExpiry{24};
inline constexpr std::chrono::minutes kSessionTouchInterval{1};  // last_used precision
inline constexpr size_t kMaxStreamsPerSession = 8;               // concurrent GET /mcp streams

// stdio: one JSON-RPC message per line.
inline constexpr size_t kMaxStdioLineBytes = 1 << 20;

// Ingest.
inline constexpr size_t kMaxIngestLines = 100000;  // episodes per batch
inline constexpr size_t kMaxIngestLineBytes = 64 << 10;
// A larger batch lands in steps (Store::WriteInSteps): on SQLite, other workspaces' writes
// wait for one step, not for the batch (docs/ingest.md). A step ends after this many lines
// or once it has run this long, whichever comes first.
inline constexpr size_t kIngestLinesPerStep = 500;
inline constexpr std::chrono::milliseconds kIngestStepBudget{25};
inline constexpr size_t kMaxSummaryChars = 2000;
inline constexpr size_t kMaxSubjectChars = 500;
inline constexpr size_t kMaxBodyChars = 20000;
inline constexpr size_t kMaxNameChars = 200;
inline constexpr size_t kMaxIdentifierChars = 320;  // an email address at most
inline constexpr size_t kMaxTagsPerEntity = 32;
inline constexpr size_t kMaxTagChars = 64;

// Tool arguments (each tool's inputSchema also bounds its own strings).
inline constexpr size_t kMaxToolNameChars = 128;
inline constexpr int kMaxDecisionPage = 100;             // decision.list limit (default 20)
inline constexpr int kMaxNotificationsPerSection = 200;  // notification.list limit (default 50)
// Resources, prompts and completions (MCP).
inline constexpr size_t kMaxCompletions = 100;        // values per completion/complete (the spec's)
inline constexpr size_t kMaxResourceUriChars = 2048;  // a longer URI is not found, unread
inline constexpr int kMaxInboxItems = 100;
inline constexpr size_t kMaxSubscriptionsPerSession = 32;  // resources/subscribe
inline constexpr size_t kMaxListenResources = 32;          // resourceSubscriptions of one listen
// subscriptions/listen streams one process holds open for a workspace (each polls).
inline constexpr size_t kMaxListenStreamsPerWorkspace = 64;
// How often a session's GET /mcp stream (or a subscriptions/listen stream) looks for changes to its
// subscribed resources: an update is told within this (plus a read of each).
inline constexpr std::chrono::milliseconds kSubscriptionPoll{
    500};  // pending approvals in cortex://inbox

// The store.
inline constexpr size_t kMaxWritesPerCommit = 256;  // group commit: one batch, one fsync

}  // namespace cortex::limits

namespace cortex {

// Caps on open MCP sessions (HTTP only; McpServer::SetSessionLimits).
struct SessionLimits {
  size_t total = limits::kMaxSessions;
  size_t per_workspace = limits::kMaxSessionsPerWorkspace;
  size_t per_token = limits::kMaxSessionsPerToken;  // not applied to tokenless (test) mode
};

// The HTTP bounds an operator may change in the [http] section of the config.
struct HttpLimits {
  std::chrono::seconds read_timeout = limits::kReadTimeout;
  std::chrono::seconds idle_timeout = limits::kIdleTimeout;
  size_t max_connections = limits::kMaxConnections;
  size_t max_connections_per_address = limits::kMaxConnectionsPerAddress;
  // The flood guard: requests per second per client address (a token bucket holding
  // `flood_burst`), before authentication or parsing. 0 turns it off.
  int64_t flood_rate = 500;
  int64_t flood_burst = 1000;
  SessionLimits sessions;
  // GET /metrics: when not empty, only `Authorization: Bearer <metrics_token>` is answered.
  std::string metrics_token;
  // Where clients reach the server (http(s)://host[:port]), behind a proxy: the OAuth
  // issuer and resource URLs. Empty: each request's Host. --base-url overrides it.
  std::string public_url;
  // CA certificates to trust when fetching OAuth client ID metadata documents instead of
  // the system's (a private CA). Empty: the system's.
  std::string client_metadata_ca_file;
  // Fetch metadata documents from loopback and private addresses too (a client on the
  // server's own network, or a test). Off: only public addresses are contacted.
  bool client_metadata_private_hosts = false;
};

}  // namespace cortex
