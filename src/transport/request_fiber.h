// Write requests as fibers (Boost.Context) on the I/O threads: the wait for a request's group
// commit suspends it instead of holding a thread (core/suspend.h). Used by the HTTP
// connections (http_connection.cc); no Beast here.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <functional>
#include <vector>

#include "core/limits.h"
#include "core/suspend.h"

namespace cortex {

// Fiber stacks kept for reuse. Touched only by its worker's thread (and, after the workers
// have stopped, by the thread that drains them).
class StackPool {
 public:
  StackPool() = default;
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  ~StackPool() {
    for (boost::context::stack_context& s : free_) make_.deallocate(s);
  }

  boost::context::stack_context Allocate() {
    if (free_.empty()) return make_.allocate();
    boost::context::stack_context s = free_.back();
    free_.pop_back();
    return s;
  }

  void Deallocate(boost::context::stack_context& s) noexcept {
    if (free_.size() < limits::kKeptFiberStacks) return free_.push_back(s);
    make_.deallocate(s);
  }

  // What Boost.Context takes: a copyable allocator. `given` learns the stack handed out.
  struct Allocator {
    StackPool* pool;
    boost::context::stack_context* given;
    boost::context::stack_context allocate() { return *given = pool->Allocate(); }
    void deallocate(boost::context::stack_context& s) noexcept { pool->Deallocate(s); }
  };

 private:
  boost::context::protected_fixedsize_stack make_{limits::kFiberStackBytes};
  std::vector<boost::context::stack_context> free_;
};

// A write request run as a fiber on its connection's worker, so that the wait for its group
// commit suspends the request instead of holding a thread (core/suspend.h). The write pool's
// way costs two more hand-offs per write: to a pool thread and back to the worker.
class RequestFiber final : public Suspender {
 public:
  // `body` runs on the fiber; `done` on the worker once it has ended, and may destroy this.
  // `fibers` counts the fibers of `ioc` running or suspended (the shutdown drain waits for
  // them); `stacks` is that worker's pool.
  RequestFiber(boost::asio::io_context& ioc, StackPool& stacks, int& fibers,
               std::function<void()> body, std::function<void()> done);
  RequestFiber(const RequestFiber&) = delete;
  RequestFiber& operator=(const RequestFiber&) = delete;

  // Runs the request until it suspends or ends. On the worker's thread.
  void Run();

  void Suspend(const std::function<void(Resume)>& start) override;

 private:
  boost::asio::io_context& ioc_;
  int& fibers_;
  std::function<void()> body_;
  std::function<void()> done_;
  boost::context::fiber fiber_;          // the request's side while the worker runs
  boost::context::fiber worker_side_;    // the worker's side while the request runs
  boost::context::stack_context stack_;  // the request's stack
  // For AddressSanitizer (StackSwitch): the worker side's stack, and each side's state
  // while the other runs.
  const void* worker_bottom_ = nullptr;
  size_t worker_size_ = 0;
  void* worker_fake_stack_ = nullptr;
  void* fake_stack_ = nullptr;
};

}  // namespace cortex
