// Reading a mailbox over IMAP (libcurl's IMAP: TLS, STARTTLS, SASL login, the mailbox URL
// scheme of RFC 5092). A connector pass: STATUS for a folder's UIDVALIDITY, UID SEARCH for
// what is new, and each new message fetched by UID with its UIDVALIDITY checked.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
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
  // "username@host": how logs, errors and cursors name the account.
  std::string Name() const;
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
  // The UIDs among `uids` that are not \Seen.
  Result<std::vector<uint32_t>> Unseen(const std::string& folder,
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

// "a,b,c:d" for `uids` (ascending), as IMAP sequence sets are written.
std::string UidSet(const std::vector<uint32_t>& uids);

}  // namespace cortex
