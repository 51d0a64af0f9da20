#include "connectors/imap.h"

#include <curl/curl.h>

#include <algorithm>
#include <ctime>
#include <mutex>
#include <regex>

namespace cortex {

namespace {

constexpr uint64_t kSearchWindow = 1000;  // UIDs per SEARCH: a reply line of at most ~11 KB

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

ImapSession::ImapSession(const ImapAccount& account) : account_(account) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

ImapSession::~ImapSession() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

std::string ImapSession::FolderUrl(const std::string& folder) const {
  std::string base = account_.url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (folder.empty()) return base + "/";
  char* escaped = curl_easy_escape(nullptr, folder.c_str(), static_cast<int>(folder.size()));
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
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_USERNAME, account_.username.c_str());
  curl_easy_setopt(curl, CURLOPT_PASSWORD, account_.password.c_str());
  curl_easy_setopt(curl, CURLOPT_USE_SSL,
                   account_.tls == "none" ? CURLUSESSL_NONE : CURLUSESSL_ALL);
  if (!account_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, account_.ca_file.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, static_cast<long>(account_.timeout_seconds));
  // A command that stalls this long (no byte in either direction) is given up.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(account_.timeout_seconds));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 256L * 1024);  // room for a long reply line
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, out);
  CURLcode rc = curl_easy_perform(curl);
  if (rc == CURLE_OK) return Status::Ok();
  std::string why = "imap " + account_.Name() + ": " +
                    (error[0] != 0 ? std::string(error) : std::string(curl_easy_strerror(rc)));
  switch (rc) {
    case CURLE_LOGIN_DENIED:
      return Status::Unauthorized(why + " (login refused: check username and password)");
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
      return Status::Unavailable(why + " (cannot reach " + Host(account_.url) + ")");
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_USE_SSL_FAILED:
      return Status::Unavailable(why + " (TLS failed)");
    default:
      return Status::Unavailable(why);
  }
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
  CORTEX_RETURN_IF_ERROR(Run("", "STATUS " + Quoted(folder) + " (UIDVALIDITY UIDNEXT)", &out));
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

Result<std::vector<uint32_t>> ImapSession::Unseen(const std::string& folder,
                                                  const std::vector<uint32_t>& uids) {
  if (uids.empty()) return std::vector<uint32_t>();
  std::string out;
  CORTEX_RETURN_IF_ERROR(Run(folder, "UID SEARCH UID " + UidSet(uids) + " UNSEEN", &out));
  return SearchResult(out);
}

Status ImapSession::MarkUnread(const std::string& folder, const std::vector<uint32_t>& uids) {
  if (uids.empty()) return Status::Ok();
  std::string out;
  return Run(folder, "UID STORE " + UidSet(uids) + " -FLAGS.SILENT (\\Seen)", &out);
}

}  // namespace cortex
