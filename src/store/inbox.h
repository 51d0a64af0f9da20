// The inbox area: one-time sign-in links for the web inbox (`cortex inbox link`) and the
// sessions they open, and the drafts put to a person inside their MCP client (elicitation).
// Only SHA-256 hashes of their secrets are stored.
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

// A draft put to the person in their MCP client: the request state the client echoes back
// names it, and answers it once.
struct Elicitation {
  std::string id;  // eli_...
  std::string workspace_id;
  std::string decision_id;  // the pending proposal
  std::string token_id;     // the only token that may answer it
  std::string secret_hash;
  std::string args_hash;  // SHA-256 of the call's arguments: a retry must repeat them
  TimePoint created_at;
  TimePoint expires_at;
  std::optional<TimePoint> answered_at;
  std::string result;  // the call's result once answered (JSON), for a held stream
};

class InboxReader {
 public:
  explicit InboxReader(TxState& s) : s_(s) {}
  // The session whose secret hashes to `secret_hash`, in any workspace (the caller learns
  // the workspace from it). NotFound if none.
  Result<InboxSession> FindSession(const std::string& secret_hash);
  // Elicitation `id` of `ws`. NotFound if none.
  Result<Elicitation> GetElicitation(const std::string& ws, const std::string& id);

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
  Status InsertElicitation(const Elicitation& e);
  // Marks elicitation `id` answered at `now`, if it was not: false if it was (also by a
  // concurrent answer on PostgreSQL).
  Result<bool> MarkElicitationAnswered(const std::string& id, TimePoint now);
  // Keeps the result the answer to elicitation `id` led to.
  Status SetElicitationResult(const std::string& id, const std::string& result);
};

inline InboxReader ReadTx::inbox() const { return InboxReader(s_); }
inline InboxWriter WriteTx::inbox() const { return InboxWriter(s_); }

}  // namespace cortex
