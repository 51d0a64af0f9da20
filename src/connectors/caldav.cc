#include "connectors/caldav.h"

#include <curl/curl.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "core/json_text.h"
#include "core/time.h"

namespace cortex {
namespace {

constexpr size_t kMaxBodyBytes = 32 * 1024 * 1024;  // a feed or a REPORT's answer
constexpr size_t kMultigetBatch = 100;              // hrefs per calendar-multiget

struct Sink {
  std::string body;
  bool too_large = false;
};

size_t Collect(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  if (sink->body.size() + size * n > kMaxBodyBytes) {
    sink->too_large = true;
    return 0;
  }
  sink->body.append(data, size * n);
  return size * n;
}

std::string Host(const std::string& url) {
  size_t start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  size_t end = url.find_first_of("/?#", start);
  std::string host = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  size_t at = host.rfind('@');
  return at == std::string::npos ? host : host.substr(at + 1);
}

bool IsFile(const std::string& url) { return url.rfind("file://", 0) == 0; }

struct Reply {
  long code = 0;
  std::string body;
};

// One request; `method` GET or REPORT (with `body` and a Depth header).
Result<Reply> Request(const CalendarAccount& account, const std::string& method,
                      const std::string& body) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (curl == nullptr) return Status::Unavailable("curl_easy_init failed");
  CURL* c = curl.get();
  char error[CURL_ERROR_SIZE] = {0};
  Sink sink;
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_URL, account.url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http,file");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "https,http");
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  if (!account.username.empty()) {
    curl_easy_setopt(c, CURLOPT_USERNAME, account.username.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, account.password.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC | CURLAUTH_DIGEST);
  }
  if (!account.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, account.ca_file.c_str());
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, static_cast<long>(account.timeout_seconds));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(account.timeout_seconds));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_slist* headers = nullptr;
  if (method != "GET") {
    headers = curl_slist_append(headers, "Depth: 1");
    headers = curl_slist_append(headers, "Content-Type: application/xml; charset=utf-8");
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  }
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(headers);
  Reply reply;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.code);
  std::string why = "calendar " + account.Name() + ": ";
  if (sink.too_large) {
    return Status::InvalidArgument(why + "the answer exceeds " + std::to_string(kMaxBodyBytes) +
                                   " bytes");
  }
  if (rc != CURLE_OK) {
    why += error[0] != 0 ? std::string(error) : std::string(curl_easy_strerror(rc));
    switch (rc) {
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_CONNECT:
        return Status::Unavailable(why + " (cannot reach " + Host(account.url) + ")");
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CONNECT_ERROR:
        return Status::Unavailable(why + " (TLS failed)");
      case CURLE_FILE_COULDNT_READ_FILE:
        return Status::NotFound(why);
      case CURLE_UNSUPPORTED_PROTOCOL:
        return Status::InvalidArgument(why + " (only https://, http:// and file:// are read)");
      default:
        return Status::Unavailable(why);
    }
  }
  if (IsFile(account.url)) reply.code = 200;
  if (reply.code == 401 || reply.code == 403) {
    return Status::Unauthorized(why + "HTTP " + std::to_string(reply.code) +
                                " (login refused: check username and password)");
  }
  if (reply.code == 404) return Status::NotFound(why + "HTTP 404 (no calendar at this URL)");
  if (reply.code < 200 || reply.code > 299) {
    std::string msg = why + "HTTP " + std::to_string(reply.code);
    if (reply.code >= 500 || reply.code == 408 || reply.code == 429) {
      return Status::Unavailable(msg);
    }
    return Status::InvalidArgument(msg + (method == "REPORT" ? " (not a CalDAV calendar?)" : ""));
  }
  reply.body = std::move(sink.body);
  return reply;
}

// 20261102T090000Z, as CalDAV's time-range wants it.
std::string CalDavTime(TimePoint t) {
  std::string s = FormatTime(t);  // 2026-11-02T09:00:00Z or with .mmm
  std::string out;
  for (char c : s.substr(0, 19)) {
    if (c != '-' && c != ':') out += c;
  }
  return out + "Z";
}

constexpr const char* kDav = "DAV:";
constexpr const char* kCalDav = "urn:ietf:params:xml:ns:caldav";

bool Is(const xmlNode* n, const char* ns, const char* name) {
  return n->type == XML_ELEMENT_NODE && n->ns != nullptr &&
         xmlStrcmp(n->ns->href, reinterpret_cast<const xmlChar*>(ns)) == 0 &&
         xmlStrcmp(n->name, reinterpret_cast<const xmlChar*>(name)) == 0;
}

std::string Content(const xmlNode* n) {
  xmlChar* text = xmlNodeGetContent(n);
  std::string out = text == nullptr ? "" : reinterpret_cast<const char*>(text);
  xmlFree(text);
  return out;
}

std::string Trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

std::string CalendarAccount::Name() const {
  if (IsFile(url)) return url.substr(7);
  size_t start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  std::string rest = url.substr(start);
  rest = rest.substr(0, rest.find_first_of("?#"));
  size_t slash = rest.find('/');
  size_t at = rest.rfind('@', slash);
  if (at != std::string::npos) rest = rest.substr(at + 1);  // never a password in a URL
  return username.empty() ? rest : username + "@" + rest;
}

Result<std::string> FetchFeed(const CalendarAccount& account) {
  auto reply = Request(account, "GET", "");
  if (!reply.ok()) return reply.status();
  return std::move(reply->body);
}

Result<std::vector<CalendarResource>> ParseMultistatus(const std::string& xml) {
  std::unique_ptr<xmlDoc, void (*)(xmlDoc*)> doc(
      xmlReadMemory(xml.data(), static_cast<int>(xml.size()), "multistatus.xml", nullptr,
                    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_HUGE),
      xmlFreeDoc);
  if (doc == nullptr) return Status::InvalidArgument("the server's answer is not XML");
  xmlNode* root = xmlDocGetRootElement(doc.get());
  if (root == nullptr || !Is(root, kDav, "multistatus")) {
    return Status::InvalidArgument("the server's answer is not a WebDAV multistatus");
  }
  std::vector<CalendarResource> out;
  for (xmlNode* r = root->children; r != nullptr; r = r->next) {
    if (!Is(r, kDav, "response")) continue;
    CalendarResource res;
    bool ok = false;
    for (xmlNode* c = r->children; c != nullptr; c = c->next) {
      if (Is(c, kDav, "href")) res.href = Trim(Content(c));
      if (!Is(c, kDav, "propstat")) continue;
      std::string status;
      xmlNode* prop = nullptr;
      for (xmlNode* p = c->children; p != nullptr; p = p->next) {
        if (Is(p, kDav, "status")) status = Content(p);
        if (Is(p, kDav, "prop")) prop = p;
      }
      if (prop == nullptr || status.find(" 200") == std::string::npos) continue;
      for (xmlNode* p = prop->children; p != nullptr; p = p->next) {
        if (Is(p, kDav, "getetag")) res.etag = Trim(Content(p));
        if (Is(p, kCalDav, "calendar-data")) res.data = Content(p);
      }
      ok = true;
    }
    // A collection lists itself, and a 404 says a resource is gone: neither is an event.
    if (ok && !res.href.empty() && !res.etag.empty()) out.push_back(std::move(res));
  }
  return out;
}

Result<std::vector<CalendarResource>> ListCalendarEvents(const CalendarAccount& account,
                                                         TimePoint from, TimePoint to) {
  std::string body =
      "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
      "<C:calendar-query xmlns:D=\"DAV:\" xmlns:C=\"urn:ietf:params:xml:ns:caldav\">"
      "<D:prop><D:getetag/></D:prop>"
      "<C:filter><C:comp-filter name=\"VCALENDAR\"><C:comp-filter name=\"VEVENT\">"
      "<C:time-range start=\"" +
      CalDavTime(from) + "\" end=\"" + CalDavTime(to) +
      "\"/></C:comp-filter></C:comp-filter></C:filter></C:calendar-query>";
  auto reply = Request(account, "REPORT", body);
  if (!reply.ok()) return reply.status();
  auto parsed = ParseMultistatus(reply->body);
  if (!parsed.ok()) {
    return Status::InvalidArgument("calendar " + account.Name() + ": " + parsed.status().message());
  }
  return parsed;
}

Result<std::vector<CalendarResource>> GetCalendarEvents(const CalendarAccount& account,
                                                        const std::vector<std::string>& hrefs) {
  std::vector<CalendarResource> out;
  for (size_t i = 0; i < hrefs.size(); i += kMultigetBatch) {
    std::string body =
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
        "<C:calendar-multiget xmlns:D=\"DAV:\" xmlns:C=\"urn:ietf:params:xml:ns:caldav\">"
        "<D:prop><D:getetag/><C:calendar-data/></D:prop>";
    for (size_t j = i; j < std::min(i + kMultigetBatch, hrefs.size()); ++j) {
      body += "<D:href>" + MarkupEscape(hrefs[j]) + "</D:href>";
    }
    body += "</C:calendar-multiget>";
    auto reply = Request(account, "REPORT", body);
    if (!reply.ok()) return reply.status();
    auto parsed = ParseMultistatus(reply->body);
    if (!parsed.ok()) {
      return Status::InvalidArgument("calendar " + account.Name() + ": " +
                                     parsed.status().message());
    }
    for (CalendarResource& r : *parsed) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace cortex
