#include "engines/actions/idempotency.h"

#include <nlohmann/json.hpp>

#include "core/crypto.h"
#include "core/json_text.h"
#include "store/actions.h"

namespace cortex {

std::string CommunicateArgsHash(const CommunicateRequest& req) {
  nlohmann::json args = {
      {"to", req.to}, {"message", req.message}, {"tone", req.tone}, {"context", req.context}};
  // Only when given, so that keys remembered before these arguments existed still match.
  if (!req.subject.empty()) args["subject"] = req.subject;
  if (!req.in_reply_to.empty()) args["in_reply_to"] = req.in_reply_to;
  return Sha256Hex(DumpJson(args));
}

Result<std::optional<ActionResult>> FindReplay(ReadTx& tx, const std::string& ws,
                                               const CommunicateRequest& req) {
  auto call = tx.actions().FindIdempotent(ws, req.token_id, req.idempotency_key);
  if (!call.ok()) return call.status();
  if (!*call) return std::optional<ActionResult>();
  if ((*call)->args_hash != CommunicateArgsHash(req)) {
    return Status::InvalidArgument(
        "field 'idempotency_key': already used for a call with other arguments; use a new "
        "key for a new message");
  }
  return std::optional<ActionResult>(ActionResultFromJson((*call)->result_json));
}

Result<bool> RememberResult(WriteTx& tx, const Clock& clock, const std::string& ws,
                            const CommunicateRequest& req, const ActionResult& result) {
  return tx.actions().RememberIdempotent(
      ws, req.token_id, req.idempotency_key,
      IdempotentCall{CommunicateArgsHash(req), ActionResultJson(result)}, clock.Now());
}

}  // namespace cortex
