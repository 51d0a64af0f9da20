// Reading a mailbox over IMAP (libcurl's IMAP: TLS, STARTTLS, SASL login, the mailbox URL
// scheme of RFC 5092). A connector pass: STATUS for a folder's UIDVALIDITY, UID SEARCH for
// what is new, and each new message fetched by UID with its UIDVALIDITY checked. While
// serving, ImapIdle waits for new mail with IDLE (RFC 2177) on a connection of its own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"

namespace cortex {

// One `[[connectors.imap]]` table (docs/connectors.md).
struct ImapAccount {
  std::string workspace;
  std::string url;  // imaps://host[:port] (TLS) or imap://host[:port] (STARTTLS unless tls="none")
  std::string username;
  std::string password;                           // from password, password_file or password_env
  std::string tls = "starttls";                   // imap:// only: starttls (required) | none
  std::string ca_file;                            // extra CAs to trust (PEM), e.g. a private CA
  std::vector<std::string> received = {"INBOX"};  // folders whose mail is message_received
  std::vector<std::string> sent;                  // folders whose mail is message_sent
  int backfill_days = 30;                         // the first sync reads this far back
  int poll_seconds = 60;                          // cortex serve: between passes
  int timeout_seconds = 30;                       // per IMAP command
  bool idle = true;  // cortex serve: watch the first folder with IDLE if the server has it
  // "username@host": how logs, errors and cursors name the account.
  std::string Name() const;
};

// What a pass needs to know of a message besides its content.
struct MessageMeta {
  bool seen = true;  // \Seen (true when the server reported no flags: nothing is changed)
  std::optional<TimePoint> internal_date;  // when the server received it, if usable
};

struct FolderStatus {
  uint32_t uidvalidity = 0;
  uint32_t uidnext = 0;
};

// One logged-in IMAP connection (opened on first use, reused by every call). Errors name
// the account and never hold the password: Unauthorized for a refused login, Unavailable
// for an unreachable host, a TLS failure or a timeout, NotFound for a missing folder.
class ImapSession {
 public:
  explicit ImapSession(const ImapAccount& account);
  ~ImapSession();
  ImapSession(const ImapSession&) = delete;
  ImapSession& operator=(const ImapSession&) = delete;

  Result<FolderStatus> Stat(const std::string& folder);
  // UIDs in `folder` above `after_uid` (and, if `since` is set, with an internal date on or
  // after that day), ascending. `uidnext` is the folder's UIDNEXT from Stat().
  Result<std::vector<uint32_t>> NewUids(const std::string& folder, uint32_t after_uid,
                                        uint32_t uidnext, std::optional<TimePoint> since);
  // The raw message `uid` of `folder`; Conflict if the folder's UIDVALIDITY is no longer
  // `uidvalidity`. Marks nothing read (see MarkUnread).
  Result<std::string> Fetch(const std::string& folder, uint32_t uidvalidity, uint32_t uid);
  // The flags and INTERNALDATE of each of `uids` that still exists, in one UID FETCH.
  Result<std::map<uint32_t, MessageMeta>> Describe(const std::string& folder,
                                                   const std::vector<uint32_t>& uids);
  // Clears \Seen on `uids` again (fetching a message marks it read on most servers).
  Status MarkUnread(const std::string& folder, const std::vector<uint32_t>& uids);

 private:
  // Runs `command` on `folder`'s URL ("" for none); its untagged responses in *out.
  Status Run(const std::string& folder, const std::string& command, std::string* out);
  Status Perform(const std::string& url, std::string* out);
  std::string FolderUrl(const std::string& folder) const;

  const ImapAccount& account_;
  void* curl_ = nullptr;  // CURL*
};

// Waits for new mail in one folder with IMAP IDLE (RFC 2177). libcurl opens the connection
// and logs in (CURLOPT_CONNECT_ONLY: the same TLS, STARTTLS, certificate checks and login as
// ImapSession); the EXAMINE and IDLE exchange then goes through curl_easy_send/recv. Not
// thread-safe; one thread owns it. Errors are ImapSession's, naming the account.
class ImapIdle {
 public:
  explicit ImapIdle(const ImapAccount& account);
  // Ends IDLE and logs out, waiting at most kIdleCloseWait for the server.
  ~ImapIdle();
  ImapIdle(const ImapIdle&) = delete;
  ImapIdle& operator=(const ImapIdle&) = delete;

  // Connects, logs in, selects `folder` read-only and starts idling. False (and nothing
  // held open) when the server does not offer IDLE.
  Result<bool> Start(const std::string& folder);
  // REQUIRES: Start() returned true. Waits until the folder holds new mail (true), or
  // `until` passes or *stop is set (false), checking *stop every quarter second. Renews
  // IDLE every kIdleRenew. Unavailable when the connection drops, the server says BYE or
  // stops answering: the caller opens a new ImapIdle.
  Result<bool> Wait(std::chrono::steady_clock::time_point until, const std::atomic<bool>& stop);

 private:
  using Deadline = std::chrono::steady_clock::time_point;
  Status Send(const std::string& line);
  // The next response line, without its CRLF (a literal's bytes kept inside it); nullopt
  // once `deadline` passes or *stop is set with no whole line received.
  Result<std::optional<std::string>> ReadLine(Deadline deadline,
                                              const std::atomic<bool>* stop = nullptr);
  // Sends `command` under a tag of ours and reads to its tagged reply: the untagged lines
  // in *untagged. Any reply but OK is an error quoting the server.
  Status Command(const std::string& command, std::vector<std::string>* untagged);
  Status BeginIdle();
  Status EndIdle(Deadline deadline);
  // The connection is no longer usable (dropped, BYE, silent): Unavailable naming the
  // account.
  Status Lost(const std::string& why);

  const ImapAccount& account_;
  void* curl_ = nullptr;  // CURL*
  int socket_ = -1;
  bool broken_ = false;
  std::string buffer_;  // bytes received and not yet read as lines
  int next_tag_ = 1;
  std::string idle_tag_;  // the tag of the IDLE in progress, or ""
  bool news_ = false;     // new mail seen and not yet reported by Wait()
  Deadline idle_since_;
};

// How often a running IDLE is ended and started again (RFC 2177 asks for less than 29
// minutes; every 10 also keeps NAT mappings alive and finds a silently dead connection).
inline constexpr std::chrono::minutes kIdleRenew{10};
// What the destructor waits for the server to acknowledge DONE and LOGOUT.
inline constexpr std::chrono::seconds kIdleCloseWait{2};
// The longest response line (literals included) an IDLE connection accepts.
inline constexpr size_t kIdleMaxLine = 1 << 20;

// An IMAP date-time ("03-Dec-2026 17:58:15 +0100", the day possibly space-padded), or
// nullopt if it is not one a TimePoint holds.
std::optional<TimePoint> ParseInternalDate(std::string_view text);

// "a,b,c:d" for `uids` (ascending), as IMAP sequence sets are written.
std::string UidSet(const std::vector<uint32_t>& uids);

}  // namespace cortex
