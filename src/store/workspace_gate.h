// One workspace at a time kept out of requests while a long write for it lands in steps
// (Store::WriteInSteps, SQLite): requests of that workspace wait for the whole write, so
// that none sees or builds on part of it; other workspaces' requests never wait.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cortex {

class WorkspaceGate {
 public:
  // Returned to the gate when destroyed. A default-constructed pass holds nothing.
  class Pass {
   public:
    Pass() = default;
    Pass(Pass&& other) noexcept
        : gate_(other.gate_), ws_(std::move(other.ws_)), held_(other.held_) {
      other.gate_ = nullptr;
    }
    Pass& operator=(Pass&& other) noexcept;
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    ~Pass() { Return(); }

   private:
    friend class WorkspaceGate;
    Pass(WorkspaceGate* gate, std::string ws, bool held)
        : gate_(gate), ws_(std::move(ws)), held_(held) {}
    void Return();

    WorkspaceGate* gate_ = nullptr;
    std::string ws_;
    bool held_ = false;
  };

  // A request's pass: waits while a long write holds `ws` (or waits to). A request running
  // as a fiber (core/suspend.h) is suspended meanwhile, its thread serving others; one that
  // must not block (a read served inline on an I/O thread) goes on without a pass instead,
  // and may see the long write's steps so far (never a write of its own built on them).
  Pass Enter(std::string_view ws);

  // The long write's hold on `ws`: waits for every pass already handed out for it to be
  // returned (new ones wait from now on), and for another hold on it to end.
  Pass Hold(std::string_view ws);

  // A pass if no long write holds `ws` (or waits to): background work skips the workspace
  // rather than wait (its due work stays due).
  std::optional<Pass> TryEnter(std::string_view ws);

  // Moves each time a hold begins or ends (on any workspace). A snapshot taken when it read
  // T saw no part of a long write if it still reads T once a pass is granted.
  uint64_t Turns() const { return turns_.load(std::memory_order_acquire); }

 private:
  struct Entry {
    int passes = 0;
    bool held = false;
    bool wanted = false;                       // a hold waits for the passes to be returned
    std::vector<std::function<void()>> woken;  // suspended fibers, resumed when a hold ends
  };
  void Return(const std::string& ws, bool held);

  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, Entry> entries_;  // only workspaces in use
  std::atomic<uint64_t> turns_{0};
};

}  // namespace cortex
