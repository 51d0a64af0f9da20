// The task runner: runs tools that support tasks (io.modelcontextprotocol/tasks) in the
// background, a few at a time, on a small fixed set of threads of this instance. A task is
// a row of mcp_tasks (engines/tasks/approval_tasks.h): written `working` before the call answers,
// then `completed` (the tool's result), `input_required` (the tool asked for input: the row keeps
// the requests; a tasks/update that answers the last of them queues the task again, on whichever
// instance took the update), `failed` (a protocol-level error: the JSON-RPC error) or `cancelled`
// (tasks/cancel, on any instance).
//
// Several instances share the store (PostgreSQL): each runner names itself (instance_id,
// on the rows it runs), looks at its rows every `poll` to stop a task cancelled elsewhere
// (the job's cancelled flag) and to write the progress its jobs noted since (their rows'
// statusMessage; a job's first note is written at once), writes a heartbeat every `heartbeat` while
// it has tasks, and fails the working tasks of an instance whose heartbeat is older than
// `dead_after` (it died mid-task; an idle runner only reads until it finds some). A stopping runner
// stops its jobs and fails what it ran or had queued. docs/mcp.md, "Tasks".
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "store/mcp_calls.h"
#include "store/store.h"

namespace cortex {

// What one run of a task's tool came to.
struct TaskOutcome {
  enum class Kind { kCompleted, kInputRequired, kFailed };
  Kind kind = Kind::kCompleted;
  nlohmann::json result;          // kCompleted: the CallToolResult
  nlohmann::json input_requests;  // kInputRequired: {key: request}
  std::string request_state;      // kInputRequired: the tool's state for its next round
  nlohmann::json error;           // kFailed: {code, message}
  std::string message;            // the task's statusMessage ("" for none)
};

// Runs task `task`'s tool once (its arguments, scopes, answers so far); stops early once
// `*cancelled` is set. It may tell `progress` how far it has come ("4000 of 10000 lines"):
// the latest note is the task's statusMessage while it works (the first at once, then the
// latest at each `poll`).
using TaskJob = std::function<TaskOutcome(const McpTask& task,
                                          const std::shared_ptr<std::atomic<bool>>& cancelled,
                                          const std::function<void(std::string)>& progress)>;

struct TaskRunnerOptions {
  int threads = 2;        // jobs that run at once
  size_t max_tasks = 32;  // tasks queued or running on this instance at most
  std::chrono::milliseconds poll{500};
  std::chrono::milliseconds heartbeat{5000};
  std::chrono::milliseconds dead_after{30000};
};

class TaskRunner {
 public:
  TaskRunner(Store& store, const Clock& clock, TaskJob job, TaskRunnerOptions options = {});
  // Stop().
  ~TaskRunner();
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  // This instance's name on its rows: inst_ + 64 random bits.
  const std::string& instance_id() const { return instance_id_; }

  // Stores `task` (its id, workspace, token, tool, arguments, scopes and answers set by the
  // caller) as working on this instance and queues it. Unavailable when
  // max_tasks are queued or running here already (nothing is stored).
  Result<McpTask> Start(McpTask task);
  // Queues `task`, already stored as working on this instance (a resumed task).
  void Enqueue(McpTask task);
  // Stops task `id` if this instance runs it (the fast path of a tasks/cancel taken here;
  // one taken elsewhere is seen within `poll`).
  void CancelLocal(const std::string& id);
  // Tasks queued or running here.
  size_t active() const;
  // Looks at this instance's rows, heartbeats and reaps now, as the poll thread does (tests).
  void PollOnce();
  // Stops the jobs (their cancelled flags), waits for them, and fails every task this
  // instance ran or had queued. Idempotent.
  void Stop();

 private:
  struct Entry {
    McpTask task;
    std::shared_ptr<std::atomic<bool>> cancelled;
  };
  // A task queued or running here.
  struct Active {
    std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
    std::string workspace_id;
    std::string progress;         // the job's latest note
    bool progress_stored = true;  // whether the row's statusMessage says it already
  };
  void Work();
  void Poll();
  void Run(Entry e);
  // Writes the notes jobs made since the last poll to their rows.
  void StoreProgress();

  Store& store_;
  const Clock& clock_;
  TaskJob job_;
  TaskRunnerOptions options_;
  std::string instance_id_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // workers: a task is queued, or stopping
  std::condition_variable poll_cv_;  // the poll thread: stopping, or a job's first note
  // A job's first note waits to be stored (guarded by mu_): a flag, not only the notify,
  // so a note made while the poll thread is not yet waiting (just started, or storing) is
  // not lost until the next look.
  bool first_note_pending_ = false;
  std::deque<Entry> queue_;
  std::unordered_map<std::string, Active> active_;  // by task id
  bool stopping_ = false;
  std::chrono::steady_clock::time_point last_heartbeat_{};  // guarded by mu_
  std::vector<std::thread> threads_;  // last: they start once everything above exists
};

}  // namespace cortex
