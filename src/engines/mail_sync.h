// Mail in: one pass of an IMAP account into its workspace (docs/connectors.md). Per folder,
// new messages are read in batches; each batch's episodes and the folder's cursor
// (UIDVALIDITY and last UID) commit in one transaction, so a pass cut short anywhere (a
// dropped connection, kill -9) neither loses nor duplicates a message. A changed
// UIDVALIDITY re-reads the backfill window; Message-IDs keep that from duplicating.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "connectors/imap.h"
#include "core/clock.h"
#include "core/status.h"
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

// The JSONL episode line (and, first, an entity line when `new_sender`) for one message of
// folder kind `kind` (message_received or message_sent); "" when it has no usable
// counterparty address. Its time is `internal_date` (the server's INTERNALDATE), else its
// Date header, else `now`. Exposed for tests and fuzzing.
std::string MailEpisodeLines(const std::string& raw, const std::string& kind,
                             std::optional<TimePoint> internal_date, TimePoint now,
                             const std::function<bool(const std::string&)>& known_address);

}  // namespace cortex
