#include "engines/tasks/task_runner.h"

#include <spdlog/spdlog.h>

#include "core/crypto.h"
#include "core/thread_name.h"

namespace cortex {
namespace {

using json = nlohmann::json;

constexpr int kInternalError = -32603;
constexpr char kStoppedMessage[] =
    "The server stopped while the task ran; nothing more will happen: call the tool again.";
constexpr char kDeadMessage[] =
    "The server instance running the task stopped answering; call the tool again.";

// The JSON-RPC error a task failed by the runner carries.
json RunnerError(const char* message) {
  return {{"code", kInternalError}, {"message", "Internal error: " + std::string(message)}};
}

}  // namespace

TaskRunner::TaskRunner(Store& store, const Clock& clock, TaskJob job, TaskRunnerOptions options)
    : store_(store),
      clock_(clock),
      job_(std::move(job)),
      options_(options),
      instance_id_("inst_" + RandomHex(8)) {
  Status st =
      store_.Write([&](WriteTx& tx) { return tx.calls().Heartbeat(instance_id_, clock_.Now()); });
  if (!st.ok()) spdlog::warn("task runner {}: heartbeat: {}", instance_id_, st.message());
  last_heartbeat_ = std::chrono::steady_clock::now();
  for (int i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this] { Work(); });
    NameThread(threads_.back(), "cortex-task");
  }
  threads_.emplace_back([this] { Poll(); });
  NameThread(threads_.back(), "cortex-task-poll");
}

TaskRunner::~TaskRunner() { Stop(); }

Result<McpTask> TaskRunner::Start(McpTask task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Status::Unavailable("the server is stopping");
    if (active_.size() >= options_.max_tasks) {
      return Status::Unavailable("this server runs " + std::to_string(options_.max_tasks) +
                                 " tasks already; retry later");
    }
    // Reserved before the write, so that two calls racing for the last place cannot both
    // have it.
    active_[task.id].workspace_id = task.workspace_id;
  }
  task.status = TaskStatus::kWorking;
  task.instance_id = instance_id_;
  task.created_at = task.updated_at = clock_.Now();
  Status st = store_.Write([&](WriteTx& tx) { return tx.calls().InsertTask(task); });
  std::unique_lock<std::mutex> lock(mu_);
  auto flag = active_[task.id].cancelled;
  if (!st.ok()) {
    active_.erase(task.id);
    return st;
  }
  queue_.push_back(Entry{task, flag});
  lock.unlock();
  cv_.notify_one();
  return task;
}

void TaskRunner::Enqueue(McpTask task) {
  std::unique_lock<std::mutex> lock(mu_);
  Active& active = active_[task.id];
  active.workspace_id = task.workspace_id;
  auto flag = active.cancelled;
  if (stopping_) flag->store(true);  // failed by Stop() with the rest
  queue_.push_back(Entry{std::move(task), flag});
  lock.unlock();
  cv_.notify_one();
}

void TaskRunner::CancelLocal(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = active_.find(id); it != active_.end()) it->second.cancelled->store(true);
}

size_t TaskRunner::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return active_.size();
}

void TaskRunner::Work() {
  while (true) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;  // what is queued is failed by Stop()
    Entry e = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Run(std::move(e));
  }
}

void TaskRunner::Run(Entry e) {
  const McpTask& started = e.task;
  TaskOutcome outcome;
  auto progress = [this, id = started.id](std::string note) {
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = active_.find(id);
      if (it == active_.end() || it->second.progress == note) return;
      first = it->second.progress.empty();
      if (first) first_note_pending_ = true;
      it->second.progress = std::move(note);
      it->second.progress_stored = false;
    }
    if (first) poll_cv_.notify_one();  // the first sign of life is stored at once
  };
  if (!e.cancelled->load()) outcome = job_(started, e.cancelled, progress);
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping = stopping_;
  }
  // Stopping: Stop() fails the task (it is still this instance's, working).
  if (stopping) return;
  bool done = false;
  if (!e.cancelled->load()) {
    McpTask next = started;
    next.updated_at = clock_.Now();
    switch (outcome.kind) {
      case TaskOutcome::Kind::kCompleted:
        next.status = TaskStatus::kCompleted;
        next.result = std::move(outcome.result);
        next.instance_id.clear();
        break;
      case TaskOutcome::Kind::kInputRequired:
        next.status = TaskStatus::kInputRequired;
        next.input_requests = std::move(outcome.input_requests);
        next.request_state = std::move(outcome.request_state);
        next.instance_id.clear();
        break;
      case TaskOutcome::Kind::kFailed:
        next.status = TaskStatus::kFailed;
        next.error = std::move(outcome.error);
        next.instance_id.clear();
        break;
    }
    next.status_message = outcome.message;
    Status st = store_.Write([&](WriteTx& tx) -> Status {
      auto moved = tx.calls().UpdateTask(next, started);
      if (!moved.ok()) return moved.status();
      done = *moved;
      return Status::Ok();
    });
    if (!st.ok()) {
      spdlog::warn("task {}: storing its outcome: {}", started.id, st.message());
      // Left working on this instance: Stop() fails it, or a later look does.
    }
  }
  if (!done) {
    // Cancelled (or failed) elsewhere while it ran: the row already says so; it is no
    // longer this instance's.
    Status st = store_.Write(
        [&](WriteTx& tx) { return tx.calls().ReleaseTask(started.workspace_id, started.id); });
    if (!st.ok()) spdlog::warn("task {}: release: {}", started.id, st.message());
  }
  std::lock_guard<std::mutex> lock(mu_);
  active_.erase(started.id);
}

void TaskRunner::PollOnce() {
  bool any, beat = false;
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    any = !active_.empty();
    if (now - last_heartbeat_ >= options_.heartbeat) {
      beat = true;
      last_heartbeat_ = now;
    }
  }
  if (any) {
    StoreProgress();
    // A task cancelled (or failed) on another instance: stop its job.
    std::vector<McpTask> rows;
    Status st = store_.Read([&](ReadTx& tx) -> Status {
      auto found = tx.calls().TasksOfInstance(instance_id_);
      if (!found.ok()) return found.status();
      rows = std::move(*found);
      return Status::Ok();
    });
    if (st.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      for (const McpTask& t : rows) {
        if (t.status == TaskStatus::kWorking) continue;
        if (auto it = active_.find(t.id); it != active_.end()) it->second.cancelled->store(true);
      }
    }
  }
  if (!beat) return;
  TimePoint t = clock_.Now();
  if (!any) {
    // Idle: no heartbeat to write (a task started here is safe from reaping until it has
    // stood still for dead_after, and the beats start with it); only a look, read-only,
    // for another instance's tasks left working when it died.
    bool dead = false;
    Status looked = store_.Read([&](ReadTx& tx) -> Status {
      auto found = tx.calls().AnyDeadTasks(t - options_.dead_after);
      if (!found.ok()) return found.status();
      dead = *found;
      return Status::Ok();
    });
    if (!looked.ok())
      spdlog::warn("task runner {}: looking for dead tasks: {}", instance_id_, looked.message());
    if (!dead) return;
  }
  int64_t reaped = 0;
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    if (any) CORTEX_RETURN_IF_ERROR(tx.calls().Heartbeat(instance_id_, t));
    auto failed = tx.calls().FailTasksOf("", t - options_.dead_after, t, kDeadMessage,
                                         RunnerError(kDeadMessage));
    if (!failed.ok()) return failed.status();
    reaped = *failed;
    return Status::Ok();
  });
  if (!st.ok()) spdlog::warn("task runner {}: heartbeat: {}", instance_id_, st.message());
  if (reaped > 0) spdlog::warn("failed {} tasks of instances that stopped answering", reaped);
}

void TaskRunner::StoreProgress() {
  struct Note {
    std::string id, workspace_id, text;
  };
  std::vector<Note> notes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, active] : active_) {
      if (active.progress_stored) continue;
      notes.push_back({id, active.workspace_id, active.progress});
      active.progress_stored = true;  // a failed write is not retried: the next note is
    }
  }
  if (notes.empty()) return;
  TimePoint now = clock_.Now();
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    for (const Note& n : notes) {
      CORTEX_RETURN_IF_ERROR(
          tx.calls().NoteTaskProgress(n.workspace_id, n.id, instance_id_, n.text, now));
    }
    return Status::Ok();
  });
  if (!st.ok()) spdlog::warn("task runner {}: storing progress: {}", instance_id_, st.message());
}

void TaskRunner::Poll() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    poll_cv_.wait_for(lock, options_.poll, [this] { return stopping_ || first_note_pending_; });
    if (stopping_) break;
    first_note_pending_ = false;
    lock.unlock();
    PollOnce();
    lock.lock();
  }
}

void TaskRunner::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    for (auto& [id, active] : active_) active.cancelled->store(true);
  }
  cv_.notify_all();
  poll_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  int64_t failed = 0;
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    auto f = tx.calls().FailTasksOf(instance_id_, TimePoint{}, clock_.Now(), kStoppedMessage,
                                    RunnerError(kStoppedMessage));
    if (!f.ok()) return f.status();
    failed = *f;
    return Status::Ok();
  });
  if (!st.ok()) spdlog::warn("task runner {}: failing its tasks: {}", instance_id_, st.message());
  if (failed > 0) spdlog::info("stopped: failed {} tasks that were running or queued", failed);
  std::lock_guard<std::mutex> lock(mu_);
  queue_.clear();
  active_.clear();
}

}  // namespace cortex
