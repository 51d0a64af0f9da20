// Tasks (the io.modelcontextprotocol/tasks extension of MCP 2026-07-28). To a client that
// declares the extension, an action.communicate draft waiting for a person's approval is a
// task: `input_required` (with the approval form as its input request) until a person
// decides, in the inbox, through the CLI, through action.approve / action.reject with the
// `approve` scope, or by answering the form with a person's token (tasks/update); then
// `completed` with the tool's result (the action as it stands: approved and sent), or
// `cancelled` if the draft was rejected or expired. The task is stored before the reply;
// its id is task_ + 128 random bits, and every look-up is the caller's workspace's.
// docs/mcp.md, "Tasks".
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "engines/actions/actions.h"
#include "store/mcp_calls.h"
#include "store/store.h"

namespace cortex {

inline constexpr char kTasksExtension[] = "io.modelcontextprotocol/tasks";
// How long a task can be read after it was created (its ttlMs), and how often a client is
// asked to poll.
inline constexpr std::chrono::hours kTaskLifetime{24 * 7};
inline constexpr std::chrono::milliseconds kTaskPollInterval{2000};

// Stores a task following the pending draft of `pending` (status pending_approval), made by
// tool `tool` with `token_id`'s call.
Result<McpTask> CreateApprovalTask(Store& store, const Clock& clock, const std::string& ws,
                                   const std::string& token_id, const std::string& tool,
                                   const ActionResult& pending);

// Task `id` of `ws` as it stands now: a task following a draft moves to completed or
// cancelled (stored, once) when a person has decided. NotFound for an unknown id, another
// workspace's, or an expired one.
Result<McpTask> ReadTask(Store& store, const Clock& clock, const std::string& ws,
                         const std::string& id);

// The input requests of an input_required task: {"approval": elicitation/create form}.
Result<nlohmann::json> TaskInputRequests(Store& store, const std::string& ws, const McpTask& task);

// tasks/update: applies `input_responses` to task `id`. The answer to "approval" decides
// the draft when `token_id`'s scopes include approve (a person's client): InvalidArgument
// otherwise (an agent never approves its own draft), or for an answer that is not the
// form's. Keys the task did not ask for are ignored. A declined or cancelled form decides
// nothing. NotFound as ReadTask.
Status UpdateTask(Store& store, const Clock& clock, const ActionConfig& config,
                  const std::string& ws, const std::string& token_id, bool may_approve,
                  const std::string& id, const nlohmann::json& input_responses);

// tasks/update of a task a TaskRunner runs (no draft): records the answers in
// `input_responses` to the input requests task `id` still has (other keys are ignored).
// Once none is left the task is working again on instance `instance_id`, and is returned
// for that instance's runner to queue; nullopt otherwise (more to answer, or nothing
// applied). NotFound as ReadTask.
Result<std::optional<McpTask>> AnswerTask(Store& store, const Clock& clock, const std::string& ws,
                                          const std::string& id,
                                          const nlohmann::json& input_responses,
                                          const std::string& instance_id);

// tasks/cancel: a task not yet terminal becomes cancelled (the client stops following it;
// a draft stays in the inbox for the person). Terminal tasks stay as they are. NotFound as
// ReadTask.
Status CancelTask(Store& store, const Clock& clock, const std::string& ws, const std::string& id);

// The task as the wire shows it: {taskId, status, statusMessage?, createdAt,
// lastUpdatedAt, ttlMs, pollIntervalMs}.
nlohmann::json TaskJson(const McpTask& task);

}  // namespace cortex
