// Mail in: one pass of an IMAP account into its workspace (docs/connectors.md). Per folder,
// new messages are read in batches; each batch's episodes and the folder's cursor
// (UIDVALIDITY and last UID) commit in one transaction, so a pass cut short anywhere (a
// dropped connection, kill -9) neither loses nor duplicates a message. A changed
// UIDVALIDITY re-reads the backfill window; Message-IDs keep that from duplicating.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "connectors/imap.h"
#include "core/clock.h"
#include "core/status.h"
#include "engines/sync/incoming.h"
#include "engines/world/ingest.h"
#include "store/store.h"

namespace cortex {

struct MailSyncReport {
  size_t added = 0;       // episodes stored
  size_t duplicates = 0;  // messages already stored (same Message-ID)
  size_t skipped = 0;     // messages without a usable address (no From, or no To if sent)
  size_t triaged = 0;     // received messages triaged
  size_t resynced = 0;    // folders re-read after their UIDVALIDITY changed
  // "added 12 (INBOX 10, Sent 2), 1 already stored"
  std::string Summary() const;
  std::string per_folder;
};

// Reads what is new in every folder of `account` into its workspace (created if missing).
// A folder's error stops the pass and names the account (and folder); what was committed
// before it stays. `stop`, if given and set, ends the pass after the batch in hand.
Result<MailSyncReport> SyncMailbox(Store& store, const Clock& clock, const ImapAccount& account,
                                   ImapSession& session, const std::atomic<bool>* stop = nullptr);

// What one message of folder kind `kind` (message_received or message_sent) adds to the
// world: its episode, after an entity for the sender (the recipient, if sent) when the mail
// names them and `known_address` does not know the address yet; nothing when it has no
// usable counterparty address. Its time is `internal_date` (the server's INTERNALDATE),
// else its Date header, else `now`. Exposed for tests and fuzzing.
std::vector<IngestItem> MailItems(const std::string& raw, const std::string& kind,
                                  std::optional<TimePoint> internal_date, TimePoint now,
                                  const std::function<bool(const std::string&)>& known_address);

// An IMAP account as an incoming source: a pass is SyncMailbox over a new connection.
// While serving, where the server offers IDLE (and the account does not say idle = false),
// a second connection watches the account's first folder, and new mail there ends the wait
// for the next pass at once. A lost IDLE connection is opened again after 1, 2, 4...
// seconds (at most 5 minutes), and the wait ends for a pass at each attempt.
class MailSource : public IncomingSource {
 public:
  explicit MailSource(ImapAccount account);
  ~MailSource() override;

  std::string Name() const override { return "imap " + account_.Name(); }
  std::string Kind() const override { return "mail"; }
  const std::string& Workspace() const override { return account_.workspace; }
  std::chrono::seconds PollInterval() const override {
    return std::chrono::seconds(account_.poll_seconds);
  }
  Result<SourcePass> Pass(Store& store, const Clock& clock, const std::atomic<bool>* stop) override;
  void Watch() override;
  void WaitForNews(std::chrono::steady_clock::time_point until, StopSignal& stop) override;

 private:
  const ImapAccount account_;
  const std::string folder_;  // the one IDLE watches
  bool use_idle_;             // until the server says it has no IDLE
  std::unique_ptr<ImapIdle> idle_;
  int idle_failures_ = 0;
  std::chrono::steady_clock::time_point idle_retry_{};  // when to open it again
};

}  // namespace cortex
