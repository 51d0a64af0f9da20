#include "tools/action_tools.h"

#include "store/store.h"

namespace cortex {

using nlohmann::json;

json ActionResultSchema() {
  return {{"type", "object"},
          {"required", {"status"}},
          {"properties",
           {{"status", {{"enum", {"success", "pending_approval", "error"}}}},
            {"decision_id", {{"type", "string"}}},
            {"action_id", {{"type", "string"}}},
            {"message", {{"type", "string"}}},
            {"draft",
             {{"type", "string"},
              {"description", "The text that is sent, or that a person is asked to approve."}}},
            {"error", {{"type", "string"}}}}}};
}

ToolReply ActionReply(const Result<ActionResult>& result) {
  if (!result.ok()) {
    const Status& st = result.status();
    if (st.code() == Code::kConflict) return ToolReply::Error("not_pending", st.message());
    if (CommitOutcomeUnknown(st)) {
      return ToolReply::Error("action_engine_error",
                              "the action engine cannot tell whether this was recorded (" +
                                  st.message() +
                                  "); retry it: action.communicate with the same "
                                  "idempotency_key returns the first call's result if it was, "
                                  "action.approve and action.reject answer not_pending");
    }
    if (st.code() == Code::kUnavailable || st.code() == Code::kInternal) {
      return ToolReply::Error("action_engine_error", "the action engine could not record this (" +
                                                         st.message() +
                                                         "); nothing was sent, retry");
    }
    return ToolReply::FromStatus(st);
  }
  const ActionResult& r = *result;
  json body = {{"status", Name(r.outcome)},
               {"decision_id", r.decision_id},
               {"action_id", r.action_id},
               {"message", r.message}};
  if (!r.draft.empty()) body["draft"] = r.draft;
  if (r.outcome == ActionOutcome::kError) {
    body["error"] = r.error;
    if (r.error == "quota_exceeded") {
      body["quota"] = r.quota;
      body["retry_after_s"] = r.retry_after_s;
      body.erase("decision_id");  // nothing was decided
      body.erase("action_id");
    }
    return ToolReply::ErrorBody(std::move(body));
  }
  return ToolReply::Ok(std::move(body));
}

}  // namespace cortex
