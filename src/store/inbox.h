// The inbox area: one-time sign-in links for the web inbox (`cortex inbox link`) and the
// sessions they open. Only SHA-256 hashes of their secrets are stored.
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "core/time.h"
#include "store/tx.h"

namespace cortex {

struct InboxLink {
  std::string id;  // lnk_...
  std::string workspace_id;
  std::string secret_hash;
  TimePoint created_at;
  TimePoint expires_at;
  std::optional<TimePoint> used_at;
  bool secure = false;  // made for an https:// address: its session's cookie is Secure
};

struct InboxSession {
  std::string id;  // ses_...: names the session in the ledger; not a secret
  std::string workspace_id;
  std::string secret_hash;
  std::string link_id;  // the link that opened it
  TimePoint created_at;
  TimePoint expires_at;
  std::optional<TimePoint> ended_at;  // signed out
};

class InboxReader {
 public:
  explicit InboxReader(TxState& s) : s_(s) {}
  // The session whose secret hashes to `secret_hash`, in any workspace (the caller learns
  // the workspace from it). NotFound if none.
  Result<InboxSession> FindSession(const std::string& secret_hash);

 protected:
  TxState& s_;
};

class InboxWriter : public InboxReader {
 public:
  using InboxReader::InboxReader;
  Status InsertLink(const InboxLink& link);
  // Uses the link whose secret hashes to `secret_hash`: marks it used at `now` and returns
  // it. NotFound if there is none; Conflict (saying which) if it was used or has expired.
  Result<InboxLink> UseLink(const std::string& secret_hash, TimePoint now);
  Status InsertSession(const InboxSession& session);
  // Ends session `id` of `ws` at `at` (sign-out). NotFound if there is no such live session.
  Status EndSession(const std::string& ws, const std::string& id, TimePoint at);
};

inline InboxReader ReadTx::inbox() const { return InboxReader(s_); }
inline InboxWriter WriteTx::inbox() const { return InboxWriter(s_); }

}  // namespace cortex
