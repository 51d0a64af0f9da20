#include "connectors/imap.h"

#include <curl/curl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <regex>
#include <sstream>

#include "connectors/mime.h"
#include "core/time.h"

namespace cortex {

namespace {

constexpr uint64_t kSearchWindow = 1000;  // UIDs per SEARCH: a reply line of at most ~11 KB

void EnsureCurl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t Collect(char* data, size_t size, size_t n, void* userp) {
  static_cast<std::string*>(userp)->append(data, size * n);
  return size * n;
}

// An IMAP quoted string.
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string Host(const std::string& url) {
  size_t start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  size_t end = url.find('/', start);
  return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The options every connection of `account` shares: login, TLS, timeouts.
void SetOptions(CURL* curl, const ImapAccount& account, const std::string& url, char* error) {
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_USERNAME, account.username.c_str());
  curl_easy_setopt(curl, CURLOPT_PASSWORD, account.password.c_str());
  curl_easy_setopt(curl, CURLOPT_USE_SSL, account.tls == "none" ? CURLUSESSL_NONE : CURLUSESSL_ALL);
  if (!account.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, account.ca_file.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, static_cast<long>(account.timeout_seconds));
  // A command that stalls this long (no byte in either direction) is given up.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(account.timeout_seconds));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
}

// A libcurl failure as a Status naming the account (never its password).
Status Failure(const ImapAccount& account, CURLcode rc, const char* error) {
  std::string why = "imap " + account.Name() + ": " +
                    (error[0] != 0 ? std::string(error) : std::string(curl_easy_strerror(rc)));
  switch (rc) {
    case CURLE_LOGIN_DENIED:
      return Status::Unauthorized(why + " (login refused: check username and password)");
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
      return Status::Unavailable(why + " (cannot reach " + Host(account.url) + ")");
    case CURLE_QUOTE_ERROR:  // the server answered NO or BAD to a custom command
      return Status::NotFound(why + " (the server refused the command)");
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_USE_SSL_FAILED:
      return Status::Unavailable(why + " (TLS failed)");
    default:
      return Status::Unavailable(why);
  }
}

std::string BaseUrl(const ImapAccount& account) {
  std::string base = account.url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

}  // namespace

std::string ImapAccount::Name() const { return username + "@" + Host(url); }

std::string UidSet(const std::vector<uint32_t>& uids) {
  std::string out;
  for (size_t i = 0; i < uids.size();) {
    size_t j = i;
    while (j + 1 < uids.size() && uids[j + 1] == uids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(uids[i]);
    if (j > i) out += ':' + std::to_string(uids[j]);
    i = j + 1;
  }
  return out;
}

ImapSession::ImapSession(const ImapAccount& account) : account_(account) { EnsureCurl(); }

ImapSession::~ImapSession() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

std::string ImapSession::FolderUrl(const std::string& folder) const {
  std::string base = BaseUrl(account_);
  if (folder.empty()) return base + "/";
  std::string name = ImapMailboxName(folder);
  char* escaped = curl_easy_escape(nullptr, name.c_str(), static_cast<int>(name.size()));
  std::string out = base + "/" + escaped;
  curl_free(escaped);
  return out;
}

Status ImapSession::Perform(const std::string& url, std::string* out) {
  if (curl_ == nullptr) {
    curl_ = curl_easy_init();
    if (curl_ == nullptr) return Status::Unavailable("curl_easy_init failed");
  }
  CURL* curl = static_cast<CURL*>(curl_);
  char error[CURL_ERROR_SIZE] = {0};
  SetOptions(curl, account_, url, error);
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 256L * 1024);  // room for a long reply line
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, out);
  CURLcode rc = curl_easy_perform(curl);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);  // `error` goes out of scope
  if (rc == CURLE_OK) return Status::Ok();
  return Failure(account_, rc, error);
}

Status ImapSession::Run(const std::string& folder, const std::string& command, std::string* out) {
  CURL* curl = nullptr;
  if (curl_ == nullptr) {
    curl_ = curl_easy_init();
    if (curl_ == nullptr) return Status::Unavailable("curl_easy_init failed");
  }
  curl = static_cast<CURL*>(curl_);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, command.c_str());
  Status st = Perform(FolderUrl(folder), out);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, nullptr);
  return st;
}

Result<FolderStatus> ImapSession::Stat(const std::string& folder) {
  std::string out;
  Status st = Run("", "STATUS " + Quoted(ImapMailboxName(folder)) + " (UIDVALIDITY UIDNEXT)", &out);
  // A folder the server does not have is refused as a command (libcurl's "Quote command
  // returned error"): name the folder, and where it was configured.
  if (st.code() == Code::kNotFound) {
    return Status::NotFound("imap " + account_.Name() + ": no folder " + Quoted(folder) +
                            " on the server (it refused STATUS for it): check the folder names "
                            "of this account's received and sent in [[connectors.imap]]");
  }
  CORTEX_RETURN_IF_ERROR(st);
  static const std::regex kValidity(R"(UIDVALIDITY (\d+))"), kNext(R"(UIDNEXT (\d+))");
  std::smatch v, n;
  if (!std::regex_search(out, v, kValidity)) {
    return Status::NotFound("imap " + account_.Name() + ": no folder " + Quoted(folder));
  }
  FolderStatus s;
  s.uidvalidity = static_cast<uint32_t>(std::stoul(v[1]));
  if (std::regex_search(out, n, kNext)) s.uidnext = static_cast<uint32_t>(std::stoul(n[1]));
  return s;
}

namespace {

std::vector<uint32_t> SearchResult(const std::string& out) {
  std::vector<uint32_t> uids;
  size_t pos = 0;
  while ((pos = out.find("* SEARCH", pos)) != std::string::npos) {
    pos += 8;
    size_t end = out.find('\n', pos);
    std::string line = out.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    char* p = line.data();
    while (*p != 0) {
      char* next = nullptr;
      unsigned long v = std::strtoul(p, &next, 10);
      if (next == p) {
        ++p;
        continue;
      }
      uids.push_back(static_cast<uint32_t>(v));
      p = next;
    }
  }
  std::sort(uids.begin(), uids.end());
  uids.erase(std::unique(uids.begin(), uids.end()), uids.end());
  return uids;
}

}  // namespace

Result<std::vector<uint32_t>> ImapSession::NewUids(const std::string& folder, uint32_t after_uid,
                                                   uint32_t uidnext,
                                                   std::optional<TimePoint> since) {
  std::string criteria;
  if (since) {
    static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    std::time_t t = std::chrono::system_clock::to_time_t(*since);
    std::tm tm{};
    gmtime_r(&t, &tm);
    criteria = " SINCE " + std::to_string(tm.tm_mday) + "-" + kMonths[tm.tm_mon] + "-" +
               std::to_string(tm.tm_year + 1900);
  }
  // In windows of UIDs: libcurl hands a long reply line to its caller only in part, so
  // one SEARCH over a large folder would lose UIDs. The last window is open ("n:*").
  std::vector<uint32_t> uids;
  uint64_t lo = static_cast<uint64_t>(after_uid) + 1;
  while (true) {
    bool open = lo + kSearchWindow > uidnext;
    std::string range = std::to_string(lo) + ":" +
                        (open ? std::string("*") : std::to_string(lo + kSearchWindow - 1));
    std::string out;
    CORTEX_RETURN_IF_ERROR(Run(folder, "UID SEARCH UID " + range + criteria, &out));
    for (uint32_t u : SearchResult(out)) {
      // "n:*" always matches the highest UID, even one below n.
      if (u >= lo && (open || u < lo + kSearchWindow)) uids.push_back(u);
    }
    if (open) break;
    lo += kSearchWindow;
  }
  std::sort(uids.begin(), uids.end());
  uids.erase(std::unique(uids.begin(), uids.end()), uids.end());
  return uids;
}

Result<std::string> ImapSession::Fetch(const std::string& folder, uint32_t uidvalidity,
                                       uint32_t uid) {
  std::string out;
  Status st = Perform(FolderUrl(folder) + ";UIDVALIDITY=" + std::to_string(uidvalidity) +
                          "/;UID=" + std::to_string(uid),
                      &out);
  if (!st.ok()) {
    // libcurl refuses a mailbox whose UIDVALIDITY is not the one in the URL.
    auto now = Stat(folder);
    if (now.ok() && now->uidvalidity != uidvalidity) {
      return Status::Conflict("imap " + account_.Name() + ": UIDVALIDITY of " + Quoted(folder) +
                              " changed");
    }
    return st;
  }
  return out;
}

std::optional<TimePoint> ParseInternalDate(std::string_view text) {
  // "DD-Mon-YYYY HH:MM:SS +ZZZZ" once a day of one digit is made two.
  std::string t(text);
  if (!t.empty() && t[0] == ' ') t.erase(0, 1);
  if (t.size() > 1 && t[1] == '-') t.insert(0, "0");
  static const char kShape[] = "00-aaa-0000 00:00:00 +0000";
  if (t.size() != sizeof kShape - 1) return std::nullopt;
  for (size_t i = 0; i < t.size(); ++i) {
    char want = kShape[i], c = t[i];
    bool fits = want == '0'   ? std::isdigit(static_cast<unsigned char>(c)) != 0
                : want == 'a' ? std::isalpha(static_cast<unsigned char>(c)) != 0
                : want == '+' ? c == '+' || c == '-'
                              : c == want;
    if (!fits) return std::nullopt;
  }
  static const char* kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                  "jul", "aug", "sep", "oct", "nov", "dec"};
  int month = 0;
  for (int i = 0; i < 12; ++i) {
    if (strncasecmp(t.data() + 3, kMonths[i], 3) == 0) month = i + 1;
  }
  if (month == 0) return std::nullopt;
  char rfc3339[48];
  std::snprintf(rfc3339, sizeof rfc3339, "%.4s-%02d-%.2sT%.8s%c%.2s:%.2s", t.data() + 7, month,
                t.data(), t.data() + 12, t[21], t.data() + 22, t.data() + 24);
  auto time = ParseTime(rfc3339);  // checks the ranges, and that a TimePoint holds it
  if (!time.ok()) return std::nullopt;
  return *time;
}

namespace {

// Where the value of FETCH item `item` ("UID ", "FLAGS (", "INTERNALDATE \"") begins in
// `line`, or npos. Servers write item names in capitals.
size_t ItemValue(const std::string& line, const std::string& item) {
  for (size_t at = line.find(item); at != std::string::npos; at = line.find(item, at + 1)) {
    if (at > 0 && (line[at - 1] == ' ' || line[at - 1] == '(')) return at + item.size();
  }
  return std::string::npos;
}

}  // namespace

Result<std::map<uint32_t, MessageMeta>> ImapSession::Describe(const std::string& folder,
                                                              const std::vector<uint32_t>& uids) {
  std::map<uint32_t, MessageMeta> meta;
  if (uids.empty()) return meta;
  std::string out;
  CORTEX_RETURN_IF_ERROR(Run(folder, "UID FETCH " + UidSet(uids) + " (FLAGS INTERNALDATE)", &out));
  // A line per message, its items in any order:
  // * 12 FETCH (UID 1234 FLAGS (\Seen) INTERNALDATE "03-Dec-2026 17:58:15 +0000")
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    size_t uid_at = ItemValue(line, "UID ");
    if (uid_at == std::string::npos) continue;
    char* end = nullptr;
    unsigned long uid = std::strtoul(line.c_str() + uid_at, &end, 10);
    if (end == line.c_str() + uid_at || uid == 0 || uid > UINT32_MAX) continue;
    MessageMeta& m = meta[static_cast<uint32_t>(uid)];
    size_t flags_at = ItemValue(line, "FLAGS (");
    if (flags_at != std::string::npos) {
      std::istringstream flags(line.substr(flags_at, line.find(')', flags_at) - flags_at));
      std::string flag;
      m.seen = false;
      while (flags >> flag) m.seen = m.seen || strcasecmp(flag.c_str(), "\\Seen") == 0;
    }
    size_t date_at = ItemValue(line, "INTERNALDATE \"");
    if (date_at != std::string::npos) {
      size_t close = line.find('"', date_at);
      if (close != std::string::npos) {
        m.internal_date =
            ParseInternalDate(std::string_view(line).substr(date_at, close - date_at));
      }
    }
  }
  return meta;
}

Status ImapSession::MarkUnread(const std::string& folder, const std::vector<uint32_t>& uids) {
  if (uids.empty()) return Status::Ok();
  std::string out;
  return Run(folder, "UID STORE " + UidSet(uids) + " -FLAGS.SILENT (\\Seen)", &out);
}

namespace {

using std::chrono::steady_clock;

// "* 12 EXISTS": the folder holds more messages than before.
bool IsNews(const std::string& line) {
  static const std::regex kExists(R"(\* \d+ EXISTS\s*)", std::regex::icase);
  return std::regex_match(line, kExists);
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && strncasecmp(s.data(), prefix.data(), prefix.size()) == 0;
}

// The size of the literal announced by the line ending at `eol` ("... {123}" or "{123+}"),
// if it announces one.
std::optional<size_t> LiteralSize(const std::string& buffer, size_t eol) {
  if (eol == 0 || buffer[eol - 1] != '}') return std::nullopt;
  size_t open = buffer.rfind('{', eol - 1);
  if (open == std::string::npos) return std::nullopt;
  std::string digits = buffer.substr(open + 1, eol - 1 - open - 1);
  if (!digits.empty() && digits.back() == '+') digits.pop_back();
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoul(digits);
}

// Waits until `socket` is ready for `events` or `ms` pass.
void AwaitSocket(int socket, short events, int ms) {
  pollfd p{socket, events, 0};
  (void)poll(&p, 1, ms);
}

}  // namespace

ImapIdle::ImapIdle(const ImapAccount& account) : account_(account) { EnsureCurl(); }

ImapIdle::~ImapIdle() {
  if (curl_ == nullptr) return;
  if (!broken_ && !idle_tag_.empty()) {
    (void)EndIdle(steady_clock::now() + kIdleCloseWait);
  }
  CURL* curl = static_cast<CURL*>(curl_);
  // libcurl says LOGOUT as it closes: a server gone silent is waited for this long at most.
  curl_easy_setopt(curl, CURLOPT_SERVER_RESPONSE_TIMEOUT,
                   static_cast<long>(kIdleCloseWait.count()));
  curl_easy_cleanup(curl);
}

Status ImapIdle::Lost(const std::string& why) {
  broken_ = true;
  return Status::Unavailable("imap " + account_.Name() + ": IDLE connection lost: " + why);
}

Result<bool> ImapIdle::Start(const std::string& folder) {
  if (curl_ != nullptr) return Status::Internal("ImapIdle::Start called twice");
  curl_ = curl_easy_init();
  if (curl_ == nullptr) return Status::Unavailable("curl_easy_init failed");
  CURL* curl = static_cast<CURL*>(curl_);
  char error[CURL_ERROR_SIZE] = {0};
  SetOptions(curl, account_, BaseUrl(account_) + "/", error);
  // Connect, TLS and log in, then hand the connection over.
  curl_easy_setopt(curl, CURLOPT_CONNECT_ONLY, 1L);
  curl_easy_setopt(curl, CURLOPT_SERVER_RESPONSE_TIMEOUT,
                   static_cast<long>(account_.timeout_seconds));
  // A peer that vanished without a word is also found by TCP keepalive.
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPIDLE, 60L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPINTVL, 30L);
  CURLcode rc = curl_easy_perform(curl);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);  // `error` goes out of scope
  if (rc != CURLE_OK) {
    broken_ = true;
    return Failure(account_, rc, error);
  }
  curl_socket_t socket = CURL_SOCKET_BAD;
  if (curl_easy_getinfo(curl, CURLINFO_ACTIVESOCKET, &socket) != CURLE_OK ||
      socket == CURL_SOCKET_BAD) {
    return Lost("no socket after login");
  }
  socket_ = socket;
  std::vector<std::string> lines;
  CORTEX_RETURN_IF_ERROR(Command("CAPABILITY", &lines));
  bool idle = false;
  for (const std::string& line : lines) {
    if (!StartsWith(line, "* CAPABILITY ")) continue;
    std::istringstream words(line.substr(13));
    std::string word;
    while (words >> word) idle = idle || strcasecmp(word.c_str(), "IDLE") == 0;
  }
  if (!idle) return false;
  // Read-only: watching never changes a flag.
  CORTEX_RETURN_IF_ERROR(Command("EXAMINE " + Quoted(ImapMailboxName(folder)), nullptr));
  CORTEX_RETURN_IF_ERROR(BeginIdle());
  return true;
}

Status ImapIdle::Send(const std::string& line) {
  CURL* curl = static_cast<CURL*>(curl_);
  std::string data = line + "\r\n";
  size_t done = 0;
  auto deadline = steady_clock::now() + std::chrono::seconds(account_.timeout_seconds);
  while (done < data.size()) {
    size_t n = 0;
    CURLcode rc = curl_easy_send(curl, data.data() + done, data.size() - done, &n);
    if (rc == CURLE_AGAIN) {
      if (steady_clock::now() >= deadline) return Lost("the server takes nothing");
      AwaitSocket(socket_, POLLOUT, 250);
      continue;
    }
    if (rc != CURLE_OK) return Lost(curl_easy_strerror(rc));
    done += n;
  }
  return Status::Ok();
}

Result<std::optional<std::string>> ImapIdle::ReadLine(Deadline deadline,
                                                      const std::atomic<bool>* stop) {
  CURL* curl = static_cast<CURL*>(curl_);
  size_t scan = 0;  // where this line's end is looked for: past any literal it holds
  while (true) {
    size_t eol = buffer_.find("\r\n", scan);
    if (eol != std::string::npos) {
      std::optional<size_t> literal = LiteralSize(buffer_, eol);
      if (!literal) {
        std::string line = buffer_.substr(0, eol);
        buffer_.erase(0, eol + 2);
        return std::optional<std::string>(std::move(line));
      }
      if (*literal > kIdleMaxLine)
        return Lost("a literal of " + std::to_string(*literal) + " bytes");
      if (buffer_.size() >= eol + 2 + *literal) {
        scan = eol + 2 + *literal;
        continue;
      }
    }
    if (buffer_.size() > kIdleMaxLine) return Lost("a response line of over 1 MiB");
    char chunk[16 * 1024];
    size_t n = 0;
    CURLcode rc = curl_easy_recv(curl, chunk, sizeof chunk, &n);
    if (rc == CURLE_OK) {
      if (n == 0) return Lost("the server closed the connection");
      buffer_.append(chunk, n);
      continue;
    }
    if (rc != CURLE_AGAIN) return Lost(curl_easy_strerror(rc));
    auto now = steady_clock::now();
    if (now >= deadline || (stop != nullptr && stop->load())) {
      return std::optional<std::string>();
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    AwaitSocket(socket_, POLLIN, static_cast<int>(std::min<int64_t>(left + 1, 250)));
  }
}

Status ImapIdle::Command(const std::string& command, std::vector<std::string>* untagged) {
  std::string tag = "cx" + std::to_string(next_tag_++);
  CORTEX_RETURN_IF_ERROR(Send(tag + " " + command));
  std::string what = command.substr(0, command.find(' '));
  auto deadline = steady_clock::now() + std::chrono::seconds(account_.timeout_seconds);
  while (true) {
    auto line = ReadLine(deadline);
    if (!line.ok()) return line.status();
    if (!*line) return Lost("no answer to " + what);
    const std::string& l = **line;
    if (StartsWith(l, tag + " ")) {
      std::string reply = l.substr(tag.size() + 1);
      if (StartsWith(reply, "OK")) return Status::Ok();
      std::string why = "imap " + account_.Name() + ": " + what + " refused (" + reply + ")";
      if (what == "EXAMINE") {
        return Status::NotFound("imap " + account_.Name() + ": no folder " +
                                command.substr(what.size() + 1) + " (" + reply + ")");
      }
      return Status::Unavailable(why);
    }
    // (EXAMINE's "* n EXISTS" is no news: the pass that follows Start() reads the folder.)
    if (StartsWith(l, "* BYE")) return Lost(l);
    if (untagged != nullptr) untagged->push_back(l);
  }
}

Status ImapIdle::BeginIdle() {
  std::string tag = "cx" + std::to_string(next_tag_++);
  CORTEX_RETURN_IF_ERROR(Send(tag + " IDLE"));
  auto deadline = steady_clock::now() + std::chrono::seconds(account_.timeout_seconds);
  while (true) {
    auto line = ReadLine(deadline);
    if (!line.ok()) return line.status();
    if (!*line) return Lost("no answer to IDLE");
    const std::string& l = **line;
    if (StartsWith(l, "+")) break;
    if (StartsWith(l, tag + " ")) {
      return Status::Unavailable("imap " + account_.Name() + ": IDLE refused (" +
                                 l.substr(tag.size() + 1) + ")");
    }
    if (StartsWith(l, "* BYE")) return Lost(l);
    if (IsNews(l)) news_ = true;
  }
  idle_tag_ = tag;
  idle_since_ = steady_clock::now();
  return Status::Ok();
}

Status ImapIdle::EndIdle(Deadline deadline) {
  std::string tag = idle_tag_;
  idle_tag_.clear();
  CORTEX_RETURN_IF_ERROR(Send("DONE"));
  while (true) {
    auto line = ReadLine(deadline);
    if (!line.ok()) return line.status();
    if (!*line) return Lost("no answer to DONE");
    const std::string& l = **line;
    if (StartsWith(l, tag + " ")) {
      if (StartsWith(l.substr(tag.size() + 1), "OK")) return Status::Ok();
      return Lost("IDLE ended with " + l.substr(tag.size() + 1));
    }
    if (StartsWith(l, "* BYE")) return Lost(l);
    if (IsNews(l)) news_ = true;
  }
}

Result<bool> ImapIdle::Wait(Deadline until, const std::atomic<bool>& stop) {
  if (curl_ == nullptr || broken_ || idle_tag_.empty()) {
    return Status::Internal("ImapIdle::Wait without a running IDLE");
  }
  while (true) {
    auto now = steady_clock::now();
    if (!news_) {
      if (stop.load() || now >= until) return false;
      if (now >= idle_since_ + kIdleRenew) {
        CORTEX_RETURN_IF_ERROR(EndIdle(now + std::chrono::seconds(account_.timeout_seconds)));
        CORTEX_RETURN_IF_ERROR(BeginIdle());
        continue;
      }
    }
    // With news in hand, only what has already arrived is read: several EXISTS in a row
    // make one wake-up.
    auto line = ReadLine(news_ ? now : std::min(until, idle_since_ + kIdleRenew), &stop);
    if (!line.ok()) return line.status();
    if (!*line) {
      if (!news_) continue;
      news_ = false;
      return true;
    }
    const std::string& l = **line;
    spdlog::debug("imap {}: IDLE: {}", account_.Name(), l);
    if (IsNews(l)) {
      news_ = true;
    } else if (StartsWith(l, "* BYE")) {
      return Lost(l);
    } else if (StartsWith(l, idle_tag_ + " ")) {
      idle_tag_.clear();
      return Lost("the server ended IDLE (" + l + ")");
    }
  }
}

}  // namespace cortex
