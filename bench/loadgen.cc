// cortex-loadgen: a load generator that speaks MCP (stateless 2026-07-28) and the ingest
// endpoint over HTTP/1.1 keep-alive. POSIX sockets and the standard library only.
//
// One thread per connection, each a blocking loop: send one request, read one response,
// check it, record its latency. Every response is checked (HTTP 200, a JSON-RPC result
// that is not `isError`, and the scenario's expected field); a wrong body is an error.
// Prints one human line, one JSON line and the first few distinct errors; exits 1 if any
// request failed. See bench/README.md.
//
//   cortex-loadgen --port P --token T --scenario inspect --ids ids.txt --connections 32
//                  --duration 10 --warmup 1 --server-pid PID
//   cortex-loadgen --port P --token T --collect-ids triage --out ids.txt
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string token;
  int connections = 1;
  double duration = -1;    // measured seconds (after warmup); 0: until the input runs out
  long long requests = 0;  // if > 0: stop after this many measured requests instead
  double warmup = 0;
  std::string scenario;  // inspect | why_action | reads | communicate | approve | ingest
  int batch = 100;       // ingest: lines per request
  std::string ids_file;
  std::string file;           // ingest: JSONL to send in batches ("-": stdin) instead of synthetic
  int counterparties = 1000;  // communicate / synthetic ingest: p{k}@org{k%40}.example
  long server_pid = 0;
  std::string collect_kind;  // --collect-ids KIND
  std::string out_file;      // --collect-ids / communicate: where ids go
  std::string since;         // --collect-ids: decision.list since filter
  long long max_ids = 0;     // --collect-ids: stop after this many
  std::string label;         // echoed in the JSON line
  double timeout = 30;       // per-request socket timeout, seconds
};

[[noreturn]] void Usage(const char* msg) {
  if (msg) std::fprintf(stderr, "cortex-loadgen: %s\n", msg);
  std::fprintf(
      stderr,
      "usage: cortex-loadgen --port P --token T --scenario S [options]\n"
      "       cortex-loadgen --port P --token T --collect-ids KIND --out FILE [--since T]\n"
      "  --host H              server address (default 127.0.0.1)\n"
      "  --scenario S          inspect | why_action | reads (50/50 inspect + why_action)\n"
      "                        | communicate | approve | ingest\n"
      "  --connections N       keep-alive connections, one thread each (default 1)\n"
      "  --duration S          measured seconds (default 5; with --file, until EOF)\n"
      "                        0: until the input (--file, approve ids) runs out\n"
      "  --requests N          stop after N measured requests instead\n"
      "  --warmup S            unmeasured seconds first (default 0)\n"
      "  --ids FILE            ids, whitespace-separated (dec_ for inspect/approve, act_ for\n"
      "                        why_action); approve uses each id at most once\n"
      "  --batch N             ingest: lines per POST /v1/episodes (default 100)\n"
      "  --file FILE           ingest: send this JSONL ('-' = stdin) in batches, once,\n"
      "                        instead of synthetic message_received episodes\n"
      "  --counterparties N    communicate/synthetic ingest: p{k}@org{k%%40}.example, k < N\n"
      "  --out FILE            communicate: append 'dec_... act_...' per pending action;\n"
      "                        --collect-ids: write one id per line\n"
      "  --server-pid PID      report the server's CPU per request and RSS from /proc\n"
      "  --collect-ids KIND    page through decision.list: triage | action_proposed |\n"
      "                        pending (action_proposed, status pending) | all\n"
      "  --since RFC3339       --collect-ids: only decisions made at or after this time\n"
      "  --max N               --collect-ids: stop after N ids\n"
      "  --label TEXT          echoed in the JSON line\n"
      "  --timeout S           per-request socket timeout (default 30)\n");
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) Usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    auto num = [&]() -> double {
      std::string v = val();
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end) Usage(("not a number for " + a + ": " + v).c_str());
      return d;
    };
    if (a == "--host")
      o.host = val();
    else if (a == "--port")
      o.port = static_cast<int>(num());
    else if (a == "--token")
      o.token = val();
    else if (a == "--connections")
      o.connections = static_cast<int>(num());
    else if (a == "--duration")
      o.duration = num();
    else if (a == "--requests")
      o.requests = static_cast<long long>(num());
    else if (a == "--warmup")
      o.warmup = num();
    else if (a == "--scenario")
      o.scenario = val();
    else if (a == "--batch")
      o.batch = static_cast<int>(num());
    else if (a == "--ids")
      o.ids_file = val();
    else if (a == "--file")
      o.file = val();
    else if (a == "--counterparties")
      o.counterparties = static_cast<int>(num());
    else if (a == "--server-pid")
      o.server_pid = static_cast<long>(num());
    else if (a == "--collect-ids")
      o.collect_kind = val();
    else if (a == "--out")
      o.out_file = val();
    else if (a == "--since")
      o.since = val();
    else if (a == "--max")
      o.max_ids = static_cast<long long>(num());
    else if (a == "--label")
      o.label = val();
    else if (a == "--timeout")
      o.timeout = num();
    else if (a == "-h" || a == "--help")
      Usage(nullptr);
    else
      Usage(("unknown option " + a).c_str());
  }
  if (o.port <= 0 || o.port > 65535) Usage("--port is required");
  if (o.token.empty()) Usage("--token is required");
  if (o.connections < 1 || o.connections > 1024) Usage("--connections must be 1..1024");
  if (o.batch < 1 || o.batch > 100000) Usage("--batch must be 1..100000");
  if (o.counterparties < 1) Usage("--counterparties must be >= 1");
  if (o.duration < 0) o.duration = (o.scenario == "ingest" && !o.file.empty()) ? 0 : 5;
  if (o.duration == 0 && o.requests <= 0 && o.scenario != "approve" &&
      !(o.scenario == "ingest" && !o.file.empty())) {
    Usage("--duration 0 needs a finite input: --file, approve's --ids, or --requests");
  }
  if (o.collect_kind.empty()) {
    static const char* kScenarios[] = {"inspect",     "why_action", "reads",
                                       "communicate", "approve",    "ingest"};
    if (std::none_of(std::begin(kScenarios), std::end(kScenarios),
                     [&](const char* s) { return o.scenario == s; })) {
      Usage("--scenario must be inspect|why_action|reads|communicate|approve|ingest");
    }
  } else if (o.out_file.empty()) {
    Usage("--collect-ids needs --out FILE");
  }
  return o;
}

// ---------------------------------------------------------------------------------------
// A blocking keep-alive HTTP/1.1 connection
// ---------------------------------------------------------------------------------------

struct Response {
  int status = 0;
  std::string_view body;
};

class Conn {
 public:
  Conn(const Options& o) : o_(o) {}
  ~Conn() { Close(); }

  // One request/response. On failure returns false with `err` set; the connection is closed
  // and the next call reconnects.
  bool Exchange(const std::string& request, Response& res, std::string& err) {
    if (fd_ < 0 && !Connect(err)) return false;
    if (!SendAll(request, err)) return Fail();
    if (!ReadResponse(res, err)) return Fail();
    return true;
  }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    len_ = start_ = 0;
  }

 private:
  bool Fail() {
    Close();
    return false;
  }

  bool Connect(std::string& err) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    std::string port = std::to_string(o_.port);
    int rc = ::getaddrinfo(o_.host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0) {
      err = std::string("getaddrinfo: ") + gai_strerror(rc);
      return false;
    }
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
      int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) continue;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      timeval tv{};
      tv.tv_sec = static_cast<time_t>(o_.timeout);
      tv.tv_usec = static_cast<suseconds_t>((o_.timeout - std::floor(o_.timeout)) * 1e6);
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        fd_ = fd;
        break;
      }
      err = std::string("connect: ") + std::strerror(errno);
      ::close(fd);
    }
    ::freeaddrinfo(res);
    return fd_ >= 0;
  }

  bool SendAll(const std::string& data, std::string& err) {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        err = std::string("send: ") + std::strerror(errno);
        return false;
      }
      off += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads more bytes into buf_; false on EOF/error. The buffer is raw memory (never
  // zero-filled: clearing 64 KiB per read was the loadgen's biggest cost).
  bool Fill(std::string& err) {
    if (start_ > 0 && start_ == len_) len_ = start_ = 0;
    if (cap_ - len_ < 16384) {
      size_t cap = std::max<size_t>(65536, cap_ * 2);
      std::unique_ptr<char[]> bigger(new char[cap]);
      if (len_) std::memcpy(bigger.get(), buf_.get(), len_);
      buf_ = std::move(bigger);
      cap_ = cap;
    }
    for (;;) {
      ssize_t n = ::recv(fd_, buf_.get() + len_, cap_ - len_, 0);
      if (n > 0) {
        len_ += static_cast<size_t>(n);
        return true;
      }
      if (n == 0) {
        err = "connection closed by server";
        return false;
      }
      if (errno == EINTR) continue;
      err = (errno == EAGAIN || errno == EWOULDBLOCK)
                ? "timeout waiting for response"
                : std::string("recv: ") + std::strerror(errno);
      return false;
    }
  }

  std::string_view Data() const { return std::string_view(buf_.get(), len_); }

  static bool IEquals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(a[i])) !=
          std::tolower(static_cast<unsigned char>(b[i])))
        return false;
    }
    return true;
  }

  bool ReadResponse(Response& res, std::string& err) {
    // The previous response's body is consumed; drop it.
    if (start_ > 0) {
      if (len_ > start_) std::memmove(buf_.get(), buf_.get() + start_, len_ - start_);
      len_ -= start_;
      start_ = 0;
    }
    size_t head_end;
    while ((head_end = Data().find("\r\n\r\n")) == std::string_view::npos) {
      if (len_ > 65536) {
        err = "response headers over 64 KiB";
        return false;
      }
      if (!Fill(err)) return false;
    }
    std::string_view head(buf_.get(), head_end);
    // Status line: HTTP/1.1 200 OK
    if (head.size() < 12 || head.substr(0, 5) != "HTTP/") {
      err = "malformed status line";
      return false;
    }
    res.status = std::atoi(std::string(head.substr(9, 3)).c_str());
    long long content_length = -1;
    bool close = false;
    size_t pos = head.find("\r\n");
    while (pos != std::string_view::npos && pos < head.size()) {
      size_t next = head.find("\r\n", pos + 2);
      std::string_view line = head.substr(
          pos + 2, next == std::string_view::npos ? std::string_view::npos : next - pos - 2);
      size_t colon = line.find(':');
      if (colon != std::string_view::npos) {
        std::string_view name = line.substr(0, colon);
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
          value.remove_prefix(1);
        if (IEquals(name, "content-length")) {
          content_length = std::atoll(std::string(value).c_str());
        } else if (IEquals(name, "connection")) {
          close = IEquals(value, "close");
        } else if (IEquals(name, "transfer-encoding")) {
          err = "unsupported Transfer-Encoding: " + std::string(value);
          return false;
        }
      }
      pos = next;
    }
    if (content_length < 0) {
      err = "response without Content-Length (HTTP " + std::to_string(res.status) + ")";
      return false;
    }
    size_t body_start = head_end + 4;
    size_t total = body_start + static_cast<size_t>(content_length);
    while (len_ < total) {
      if (!Fill(err)) return false;
    }
    res.body = std::string_view(buf_.get() + body_start, static_cast<size_t>(content_length));
    start_ = total;
    // Keep the body readable for the caller; AfterResponse() closes, and the next request
    // reconnects.
    pending_close_ = close;
    return true;
  }

 public:
  // Called by the worker after it is done with the response body.
  void AfterResponse() {
    if (pending_close_) {
      pending_close_ = false;
      Close();
    }
  }

 private:
  const Options& o_;
  int fd_ = -1;
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0;
  size_t len_ = 0;
  size_t start_ = 0;  // end of the last response in buf_
  bool pending_close_ = false;
};

// ---------------------------------------------------------------------------------------
// Request building and response checking
// ---------------------------------------------------------------------------------------

const char* const kMeta =
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
    "\"io.modelcontextprotocol/clientCapabilities\":{},"
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"cortex-loadgen\",\"version\":\"1.0\"}}";

// JSON string escaping for the few free-text values we send.
std::string JsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string ToolCall(const Options& o, uint64_t id, std::string_view tool,
                     std::string_view arguments_json) {
  std::string body;
  body.reserve(320 + arguments_json.size());
  body += "{\"jsonrpc\":\"2.0\",\"id\":";
  body += std::to_string(id);
  body += ",\"method\":\"tools/call\",\"params\":{\"name\":\"";
  body += tool;
  body += "\",\"arguments\":";
  body += arguments_json;
  body += ",";
  body += kMeta;
  body += "}}";
  std::string req;
  req.reserve(body.size() + 400);
  req += "POST /mcp HTTP/1.1\r\nHost: ";
  req += o.host;
  req += "\r\nAuthorization: Bearer ";
  req += o.token;
  req +=
      "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
      "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: ";
  req += tool;
  req += "\r\nContent-Length: ";
  req += std::to_string(body.size());
  req += "\r\n\r\n";
  req += body;
  return req;
}

std::string IngestRequest(const Options& o, const std::string& body) {
  std::string req;
  req.reserve(body.size() + 300);
  req += "POST /v1/episodes HTTP/1.1\r\nHost: ";
  req += o.host;
  req += "\r\nAuthorization: Bearer ";
  req += o.token;
  req += "\r\nContent-Type: application/x-ndjson\r\nContent-Length: ";
  req += std::to_string(body.size());
  req += "\r\n\r\n";
  req += body;
  return req;
}

// The value after "key": in compact JSON (nlohmann's dump), if it is a string.
std::optional<std::string_view> StringField(std::string_view body, std::string_view key,
                                            size_t from = 0) {
  std::string pat = "\"" + std::string(key) + "\":\"";
  size_t p = body.find(pat, from);
  if (p == std::string_view::npos) return std::nullopt;
  p += pat.size();
  size_t e = body.find('"', p);
  if (e == std::string_view::npos) return std::nullopt;
  return body.substr(p, e - p);
}

std::optional<long long> IntField(std::string_view body, std::string_view key) {
  std::string pat = "\"" + std::string(key) + "\":";
  size_t p = body.find(pat);
  if (p == std::string_view::npos) return std::nullopt;
  p += pat.size();
  size_t e = p;
  while (e < body.size() && (std::isdigit(static_cast<unsigned char>(body[e])) || body[e] == '-'))
    ++e;
  if (e == p) return std::nullopt;
  return std::atoll(std::string(body.substr(p, e - p)).c_str());
}

// Common checks of an MCP tools/call response. Returns an error text, or "" if fine.
// Patterns without backslashes only match the unescaped structuredContent, never the
// escaped copy in content[0].text.
std::string CheckToolResult(const Response& r) {
  if (r.status != 200) return "HTTP " + std::to_string(r.status);
  if (r.body.find("\"result\":{") == std::string_view::npos) return "no JSON-RPC result";
  if (r.body.find("\"isError\":true") != std::string_view::npos) return "isError";
  if (r.body.find("\"structuredContent\":{") == std::string_view::npos)
    return "no structuredContent";
  return "";
}

std::string Snip(std::string_view body) {
  std::string s(body.substr(0, 300));
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

// ---------------------------------------------------------------------------------------
// Shared run state
// ---------------------------------------------------------------------------------------

struct IdPools {
  std::vector<std::string> decisions;  // dec_
  std::vector<std::string> actions;    // act_
};

IdPools LoadIds(const std::string& path) {
  IdPools p;
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cortex-loadgen: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::string tok;
  while (in >> tok) {
    if (tok.rfind("dec_", 0) == 0)
      p.decisions.push_back(tok);
    else if (tok.rfind("act_", 0) == 0)
      p.actions.push_back(tok);
  }
  return p;
}

struct Shared {
  const Options& o;
  IdPools ids;
  std::atomic<bool> recording{false};
  std::atomic<bool> stop{false};
  std::atomic<long long> measured{0};  // requests started while recording
  std::atomic<size_t> next_id{0};      // approve: each id once
  std::atomic<bool> ids_exhausted{false};
  std::atomic<bool> input_done{false};  // ingest --file: EOF
  std::atomic<long long> episodes{0};   // ingest: episodes added (measured)
  std::atomic<long long> errors{0};
  std::atomic<long long> warm_errors{0};

  std::mutex err_mu;
  std::map<std::string, long long> error_kinds;  // first few distinct, with counts
  std::vector<std::string> error_samples;

  std::mutex file_mu;  // ingest --file reader, communicate --out writer
  FILE* in = nullptr;
  long long line_no = 0;
  FILE* out = nullptr;

  explicit Shared(const Options& opt) : o(opt) {}

  void Error(const std::string& kind, const std::string& sample) {
    std::lock_guard<std::mutex> l(err_mu);
    auto it = error_kinds.find(kind);
    if (it != error_kinds.end()) {
      ++it->second;
      return;
    }
    if (error_kinds.size() < 20) {
      error_kinds[kind] = 1;
      if (error_samples.size() < 5) error_samples.push_back(kind + " :: " + sample);
    }
  }
};

struct Xorshift {
  uint64_t s;
  explicit Xorshift(uint64_t seed) : s(seed ? seed : 0x9E3779B97F4A7C15ULL) {}
  uint64_t Next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

std::string Counterparty(uint64_t k) {
  return "p" + std::to_string(k) + "@org" + std::to_string(k % 40) + ".example";
}

std::string IsoTime(time_t t) {
  tm g{};
  gmtime_r(&t, &g);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &g);
  return b;
}

// One unit of work: the request and how to check its response.
struct Work {
  std::string request;
  std::string expect_id;   // inspect / why_action: the id that must come back
  const char* kind = "";   // inspect | why_action | communicate | approve | ingest
  long long episodes = 0;  // ingest: episode lines in the batch
  long long inbound = 0;   // ingest: message_received lines (each triaged)
};

// Builds the next request of the scenario; false when there is nothing more to send.
bool NextWork(Shared& sh, Xorshift& rng, int thread, uint64_t seq, Work& w) {
  const Options& o = sh.o;
  const std::string& sc = o.scenario;
  uint64_t rpc_id = seq + 1;
  if (sc == "inspect" || sc == "why_action" || sc == "reads") {
    bool inspect = sc == "inspect" || (sc == "reads" && (rng.Next() & 1));
    const auto& pool = inspect ? sh.ids.decisions : sh.ids.actions;
    const std::string& id = pool[rng.Next() % pool.size()];
    w.expect_id = id;
    if (inspect) {
      w.kind = "inspect";
      w.request = ToolCall(o, rpc_id, "decision.inspect", "{\"decision_id\":\"" + id + "\"}");
    } else {
      w.kind = "why_action";
      w.request = ToolCall(o, rpc_id, "meta.why_this_action", "{\"action_id\":\"" + id + "\"}");
    }
    return true;
  }
  if (sc == "communicate") {
    static const char* kTones[] = {"neutral", "direct", "warm", "formal"};
    uint64_t r = rng.Next();
    std::string args = "{\"to\":\"" + Counterparty(r % static_cast<uint64_t>(o.counterparties)) +
                       "\",\"message\":\"Benchmark note " + std::to_string(thread) + "-" +
                       std::to_string(seq) +
                       ": does Tuesday 2pm still work for the review?\",\"tone\":\"" +
                       kTones[(r >> 20) % 4] + "\"}";
    w.kind = "communicate";
    w.request = ToolCall(o, rpc_id, "action.communicate", args);
    return true;
  }
  if (sc == "approve") {
    size_t i = sh.next_id.fetch_add(1);
    if (i >= sh.ids.decisions.size()) {
      sh.ids_exhausted = true;
      return false;
    }
    w.kind = "approve";
    w.expect_id = sh.ids.decisions[i];
    w.request = ToolCall(o, rpc_id, "action.approve", "{\"decision_id\":\"" + w.expect_id + "\"}");
    return true;
  }
  // ingest
  w.kind = "ingest";
  std::string body;
  w.episodes = w.inbound = 0;
  if (!o.file.empty()) {
    std::lock_guard<std::mutex> l(sh.file_mu);
    if (sh.input_done) return false;
    char* line = nullptr;
    size_t cap = 0;
    int n = 0;
    while (n < o.batch) {
      ssize_t len = ::getline(&line, &cap, sh.in);
      if (len < 0) {
        sh.input_done = true;
        break;
      }
      std::string_view l(line, static_cast<size_t>(len));
      if (l.find_first_not_of(" \t\r\n") == std::string_view::npos) continue;
      body.append(l);
      if (body.back() != '\n') body += '\n';
      ++n;
      if (l.find("\"type\":\"episode\"") != std::string_view::npos) {
        ++w.episodes;
        if (l.find("\"kind\":\"message_received\"") != std::string_view::npos) ++w.inbound;
      }
    }
    std::free(line);
    if (n == 0) return false;
  } else {
    // Synthetic message_received episodes from known people, unique external ids.
    time_t now = std::time(nullptr);
    body.reserve(static_cast<size_t>(o.batch) * 300);
    static const long long run = static_cast<long long>(::getpid()) * 1000003LL + now;
    for (int i = 0; i < o.batch; ++i) {
      uint64_t r = rng.Next();
      std::string who = Counterparty(r % static_cast<uint64_t>(o.counterparties));
      body += "{\"type\":\"episode\",\"kind\":\"message_received\",\"occurred_at\":\"";
      body += IsoTime(now - static_cast<time_t>((r >> 16) % (90 * 86400)));
      body += "\",\"counterparty\":\"" + who + "\",\"subject\":\"Load test ";
      body += std::to_string(seq);
      body += "\",\"summary\":\"";
      body += ((r >> 8) % 8 == 0) ? "Urgent: please confirm today" : "Checking in about the plan";
      body += " (loadgen " + std::to_string(thread) + "/" + std::to_string(seq) + "/" +
              std::to_string(i) + ")\",\"thread\":\"lg-thr-" + std::to_string(r % 997) +
              "\",\"external_id\":\"lg-" + std::to_string(run) + "-" + std::to_string(thread) +
              "-" + std::to_string(seq) + "-" + std::to_string(i) + "\"}\n";
    }
    w.episodes = w.inbound = o.batch;
  }
  w.request = IngestRequest(o, body);
  return true;
}

// Checks a response; returns "" if it is what the scenario expects.
std::string Check(Shared& sh, const Work& w, const Response& r) {
  std::string_view kind = w.kind;
  if (kind == "ingest") {
    if (r.status != 200) return "HTTP " + std::to_string(r.status);
    auto status = StringField(r.body, "status");
    if (!status || *status != "ok") return "ingest status not ok";
    auto added = IntField(r.body, "episodes_added");
    if (!added || *added != w.episodes)
      return "episodes_added " + (added ? std::to_string(*added) : std::string("missing")) +
             " != " + std::to_string(w.episodes);
    auto triaged = IntField(r.body, "triaged");
    if (!triaged || *triaged != w.inbound)
      return "triaged " + (triaged ? std::to_string(*triaged) : std::string("missing")) +
             " != " + std::to_string(w.inbound);
    return "";
  }
  std::string e = CheckToolResult(r);
  if (!e.empty()) {
    // Name the tool error code if there is one.
    if (e == "isError") {
      auto code = StringField(r.body, "error");
      if (code) e += " " + std::string(*code);
    }
    return e;
  }
  if (kind == "inspect") {
    auto id = StringField(r.body, "decision_id");
    if (!id || *id != w.expect_id) return "inspect: decision_id missing or not the one asked";
    if (r.body.find("\"reasoning\":{") == std::string_view::npos) return "inspect: no reasoning";
    return "";
  }
  if (kind == "why_action") {
    auto id = StringField(r.body, "action_id");
    if (!id || *id != w.expect_id) return "why_action: action_id missing or not the one asked";
    if (r.body.find("\"contributing_episodes\":[") == std::string_view::npos)
      return "why_action: no contributing_episodes";
    return "";
  }
  if (kind == "communicate") {
    auto st = StringField(r.body, "status");
    if (!st || (*st != "pending_approval" && *st != "success"))
      return "communicate: status " + std::string(st ? *st : "missing");
    auto dec = StringField(r.body, "decision_id");
    auto act = StringField(r.body, "action_id");
    if (!dec || dec->rfind("dec_", 0) != 0 || !act || act->rfind("act_", 0) != 0)
      return "communicate: no decision_id/action_id";
    if (sh.out && *st == "pending_approval") {
      std::string line = std::string(*dec) + " " + std::string(*act) + "\n";
      std::lock_guard<std::mutex> l(sh.file_mu);
      std::fwrite(line.data(), 1, line.size(), sh.out);
    }
    return "";
  }
  if (kind == "approve") {
    auto st = StringField(r.body, "status");
    if (!st || *st != "success") return "approve: status " + std::string(st ? *st : "missing");
    return "";
  }
  return "unknown kind";
}

struct ThreadResult {
  std::vector<uint64_t> lat_ns;  // measured requests only
  long long ok = 0;
  long long errors = 0;
  uint64_t max_ns = 0;
};

void Worker(Shared& sh, int thread, ThreadResult& out) {
  Conn conn(sh.o);
  Xorshift rng(0x2545F4914F6CDD1DULL * static_cast<uint64_t>(thread + 1) ^
               static_cast<uint64_t>(Clock::now().time_since_epoch().count()));
  out.lat_ns.reserve(1 << 16);
  Work w;
  Response res;
  std::string err;
  for (uint64_t seq = 0; !sh.stop.load(std::memory_order_relaxed); ++seq) {
    bool measured = sh.recording.load(std::memory_order_relaxed);
    if (measured && sh.o.requests > 0) {
      if (sh.measured.fetch_add(1) >= sh.o.requests) {
        sh.stop = true;
        break;
      }
    }
    if (!NextWork(sh, rng, thread, seq, w)) break;
    auto t0 = Clock::now();
    bool ok = conn.Exchange(w.request, res, err);
    auto t1 = Clock::now();
    std::string problem;
    if (!ok) {
      problem = err;
    } else {
      problem = Check(sh, w, res);
      if (!problem.empty()) err = Snip(res.body);
    }
    conn.AfterResponse();
    if (problem.empty()) {
      if (measured) {
        uint64_t ns = static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
        out.lat_ns.push_back(ns);
        out.max_ns = std::max(out.max_ns, ns);
        ++out.ok;
        if (w.episodes) sh.episodes += w.episodes;
      }
    } else {
      // Errors count whether or not the measurement has started: a wrong body is wrong.
      ++out.errors;
      sh.Error(problem, err);
      if (!ok) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // no hot loop
    }
  }
}

// ---------------------------------------------------------------------------------------
// Server figures from /proc
// ---------------------------------------------------------------------------------------

struct ProcSample {
  bool ok = false;
  double cpu_s = 0;    // utime + stime
  double rss_mib = 0;  // VmRSS
  double hwm_mib = 0;  // VmHWM (peak)
};

ProcSample ReadProc(long pid) {
  ProcSample s;
  if (pid <= 0) return s;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t rp = all.rfind(')');
  if (rp == std::string::npos) return s;
  // After ")": field 3 (state) ... field 14 utime, 15 stime.
  std::vector<std::string> f;
  size_t p = rp + 2;
  while (p < all.size() && f.size() < 14) {
    size_t e = all.find(' ', p);
    if (e == std::string::npos) e = all.size();
    f.push_back(all.substr(p, e - p));
    p = e + 1;
  }
  if (f.size() < 13) return s;
  double tck = static_cast<double>(::sysconf(_SC_CLK_TCK));
  s.cpu_s = (std::atof(f[11].c_str()) + std::atof(f[12].c_str())) / tck;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_mib = std::atof(line.c_str() + 6) / 1024.0;
    if (line.rfind("VmHWM:", 0) == 0) s.hwm_mib = std::atof(line.c_str() + 6) / 1024.0;
  }
  s.ok = true;
  return s;
}

double SelfCpu() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double Percentile(const std::vector<uint64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  // Nearest rank.
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  if (rank < 1) rank = 1;
  if (rank > sorted.size()) rank = sorted.size();
  return static_cast<double>(sorted[rank - 1]) / 1000.0;
}

std::string Fixed(double v, int prec) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

// ---------------------------------------------------------------------------------------
// --collect-ids
// ---------------------------------------------------------------------------------------

int CollectIds(const Options& o) {
  std::string filters;
  if (o.collect_kind == "triage")
    filters = "\"decision_class\":\"triage\"";
  else if (o.collect_kind == "action_proposed")
    filters = "\"decision_class\":\"action_proposed\"";
  else if (o.collect_kind == "pending")
    filters = "\"decision_class\":\"action_proposed\",\"status\":\"pending\"";
  else if (o.collect_kind != "all")
    Usage("--collect-ids KIND: triage|action_proposed|pending|all");
  if (!o.since.empty()) {
    if (!filters.empty()) filters += ",";
    filters += "\"since\":\"" + JsonEscape(o.since) + "\"";
  }
  FILE* out = std::fopen(o.out_file.c_str(), "w");
  if (!out) {
    std::fprintf(stderr, "cortex-loadgen: cannot write %s\n", o.out_file.c_str());
    return 2;
  }
  Conn conn(o);
  std::string cursor;
  long long n = 0, pages = 0;
  auto t0 = Clock::now();
  for (;;) {
    std::string args = "{\"limit\":100";
    if (!filters.empty()) args += "," + filters;
    if (!cursor.empty()) args += ",\"cursor\":\"" + cursor + "\"";
    args += "}";
    Response r;
    std::string err;
    if (!conn.Exchange(ToolCall(o, static_cast<uint64_t>(pages + 1), "decision.list", args), r,
                       err)) {
      std::fprintf(stderr, "cortex-loadgen: decision.list: %s\n", err.c_str());
      std::fclose(out);
      return 1;
    }
    std::string e = CheckToolResult(r);
    if (!e.empty()) {
      std::fprintf(stderr, "cortex-loadgen: decision.list: %s: %s\n", e.c_str(),
                   Snip(r.body).c_str());
      std::fclose(out);
      return 1;
    }
    ++pages;
    size_t sc = r.body.find("\"structuredContent\":{");
    size_t from = sc;
    std::optional<std::string_view> id;
    while ((id = StringField(r.body, "decision_id", from))) {
      std::fprintf(out, "%.*s\n", static_cast<int>(id->size()), id->data());
      from = static_cast<size_t>(id->data() - r.body.data()) + id->size();
      if (o.max_ids > 0 && ++n >= o.max_ids) break;
      if (o.max_ids <= 0) ++n;
    }
    auto next = StringField(r.body, "next_cursor", sc);
    conn.AfterResponse();
    if (!next || (o.max_ids > 0 && n >= o.max_ids)) break;
    cursor = std::string(*next);
  }
  std::fclose(out);
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::fprintf(stderr, "collected %lld %s ids in %lld pages, %.1f s\n", n, o.collect_kind.c_str(),
               pages, s);
  return 0;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------

int main(int argc, char** argv) {
  Options o = Parse(argc, argv);
  if (!o.collect_kind.empty()) return CollectIds(o);

  Shared sh(o);
  const std::string& sc = o.scenario;
  if (sc == "inspect" || sc == "why_action" || sc == "reads" || sc == "approve") {
    if (o.ids_file.empty()) Usage("this scenario needs --ids FILE");
    sh.ids = LoadIds(o.ids_file);
    bool need_dec = sc != "why_action", need_act = sc == "why_action" || sc == "reads";
    if (need_dec && sh.ids.decisions.empty()) Usage("--ids has no dec_ ids");
    if (need_act && sh.ids.actions.empty()) Usage("--ids has no act_ ids");
  }
  if (sc == "ingest" && !o.file.empty()) {
    sh.in = o.file == "-" ? stdin : std::fopen(o.file.c_str(), "r");
    if (!sh.in) Usage(("cannot read " + o.file).c_str());
  }
  if (sc == "communicate" && !o.out_file.empty()) {
    sh.out = std::fopen(o.out_file.c_str(), "a");
    if (!sh.out) Usage(("cannot write " + o.out_file).c_str());
  }

  std::vector<ThreadResult> results(static_cast<size_t>(o.connections));
  std::vector<std::thread> threads;
  threads.reserve(results.size());
  if (o.warmup <= 0) sh.recording = true;
  ProcSample p0 = ReadProc(o.server_pid);
  double c0 = SelfCpu();
  auto t0 = Clock::now();
  for (int i = 0; i < o.connections; ++i)
    threads.emplace_back(Worker, std::ref(sh), i, std::ref(results[static_cast<size_t>(i)]));

  // Wait for the warmup, then measure until the duration passes, the requests are done, or
  // the input (approve ids, ingest file) runs out: i.e. every worker has exited.
  auto workers_done = [&] {
    return sh.stop.load() || sh.ids_exhausted.load() || sh.input_done.load();
  };
  auto sleep_until = [&](Clock::time_point end) {
    while (Clock::now() < end && !workers_done())
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  if (o.warmup > 0) {
    sleep_until(
        t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.warmup)));
    p0 = ReadProc(o.server_pid);
    c0 = SelfCpu();
    t0 = Clock::now();
    sh.recording = true;
  }
  if (o.requests <= 0 && o.duration > 0) {
    sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(o.duration)));
    sh.stop = true;
  }
  for (auto& t : threads) t.join();
  auto t1 = Clock::now();
  ProcSample p1 = ReadProc(o.server_pid);
  double c1 = SelfCpu();
  if (sh.out) std::fclose(sh.out);
  if (sh.in && sh.in != stdin) std::fclose(sh.in);

  std::vector<uint64_t> lat;
  long long ok = 0, errors = 0;
  uint64_t max_ns = 0;
  for (auto& r : results) {
    ok += r.ok;
    errors += r.errors;
    max_ns = std::max(max_ns, r.max_ns);
    lat.insert(lat.end(), r.lat_ns.begin(), r.lat_ns.end());
    r.lat_ns.clear();
    r.lat_ns.shrink_to_fit();
  }
  std::sort(lat.begin(), lat.end());
  double secs = std::chrono::duration<double>(t1 - t0).count();
  double rps = secs > 0 ? static_cast<double>(ok) / secs : 0;
  double mean = 0;
  for (uint64_t v : lat) mean += static_cast<double>(v);
  mean = lat.empty() ? 0 : mean / static_cast<double>(lat.size()) / 1000.0;
  double p50 = Percentile(lat, 0.50), p90 = Percentile(lat, 0.90), p99 = Percentile(lat, 0.99),
         p999 = Percentile(lat, 0.999);
  double eps = secs > 0 ? static_cast<double>(sh.episodes.load()) / secs : 0;
  double srv_cpu_per_req =
      (p0.ok && p1.ok && ok > 0) ? (p1.cpu_s - p0.cpu_s) * 1e6 / static_cast<double>(ok) : NAN;
  double srv_cpu_util = (p0.ok && p1.ok && secs > 0) ? (p1.cpu_s - p0.cpu_s) / secs : NAN;
  double cli_cpu_per_req = ok > 0 ? (c1 - c0) * 1e6 / static_cast<double>(ok) : NAN;

  std::string name = sc == "ingest" ? "ingest(batch " + std::to_string(o.batch) + ")" : sc;
  std::string prefix = o.label.empty() ? "" : "[" + o.label + "] ";
  std::printf("%s%s: %d conn, %lld req in %.2f s = %.0f req/s", prefix.c_str(), name.c_str(),
              o.connections, ok, secs, rps);
  if (sc == "ingest") std::printf(", %.0f episodes/s", eps);
  std::printf("; latency p50 %.0f us, p99 %.0f us, p99.9 %.0f us, max %.0f us; errors %lld", p50,
              p99, p999, static_cast<double>(max_ns) / 1000.0, errors);
  if (p1.ok)
    std::printf("; server %.0f us CPU/req (%.2f cores), RSS %.1f MiB, peak %.1f MiB",
                srv_cpu_per_req, srv_cpu_util, p1.rss_mib, p1.hwm_mib);
  std::printf("; client %.0f us CPU/req", cli_cpu_per_req);
  if (sh.ids_exhausted) std::printf(" (ids exhausted)");
  if (sh.input_done) std::printf(" (input done)");
  std::printf("\n");

  std::printf(
      "{\"scenario\":\"%s\",\"label\":\"%s\",\"connections\":%d,\"batch\":%d,\"requests\":%lld,"
      "\"seconds\":%s,\"rps\":%s,\"episodes_per_s\":%s,\"mean_us\":%s,\"p50_us\":%s,"
      "\"p90_us\":%s,\"p99_us\":%s,\"p999_us\":%s,\"max_us\":%s,\"errors\":%lld,"
      "\"server_cpu_us_per_req\":%s,\"server_cpu_cores\":%s,\"server_rss_mib\":%s,"
      "\"server_peak_rss_mib\":%s,\"client_cpu_us_per_req\":%s,\"ids_exhausted\":%s}\n",
      sc.c_str(), JsonEscape(o.label).c_str(), o.connections, sc == "ingest" ? o.batch : 0, ok,
      Fixed(secs, 3).c_str(), Fixed(rps, 1).c_str(),
      sc == "ingest" ? Fixed(eps, 1).c_str() : "null", Fixed(mean, 1).c_str(),
      Fixed(p50, 1).c_str(), Fixed(p90, 1).c_str(), Fixed(p99, 1).c_str(), Fixed(p999, 1).c_str(),
      Fixed(static_cast<double>(max_ns) / 1000.0, 1).c_str(), errors,
      Fixed(srv_cpu_per_req, 1).c_str(), Fixed(srv_cpu_util, 2).c_str(),
      p1.ok ? Fixed(p1.rss_mib, 1).c_str() : "null", p1.ok ? Fixed(p1.hwm_mib, 1).c_str() : "null",
      Fixed(cli_cpu_per_req, 1).c_str(), sh.ids_exhausted ? "true" : "false");
  if (errors > 0) {
    std::lock_guard<std::mutex> l(sh.err_mu);
    std::fprintf(stderr, "errors by kind:\n");
    for (const auto& [k, n] : sh.error_kinds) std::fprintf(stderr, "  %lld x %s\n", n, k.c_str());
    std::fprintf(stderr, "first samples:\n");
    for (const auto& s : sh.error_samples) std::fprintf(stderr, "  %s\n", s.c_str());
  }
  std::fflush(stdout);
  if (errors > 0) return 1;
  if (ok == 0) {
    std::fprintf(stderr, "cortex-loadgen: no request completed\n");
    return 1;
  }
  return 0;
}
