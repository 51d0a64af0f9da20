#include "store/workspace_gate.h"

#include "core/suspend.h"

namespace cortex {

WorkspaceGate::Pass& WorkspaceGate::Pass::operator=(Pass&& other) noexcept {
  if (this != &other) {
    Return();
    gate_ = other.gate_;
    ws_ = std::move(other.ws_);
    held_ = other.held_;
    other.gate_ = nullptr;
  }
  return *this;
}

void WorkspaceGate::Pass::Return() {
  if (gate_ == nullptr) return;
  gate_->Return(ws_, held_);
  gate_ = nullptr;
}

WorkspaceGate::Pass WorkspaceGate::Enter(std::string_view ws) {
  std::string key(ws);
  if (Suspender* fiber = Suspender::Current()) {
    // Suspended until a hold ends, then tried again (another hold may have come first).
    for (;;) {
      bool admitted = false;
      fiber->Suspend([&](Suspender::Resume resume) {
        std::unique_lock<std::mutex> lock(mu_);
        Entry& e = entries_[key];
        if (e.held || e.wanted) {
          e.woken.push_back(std::move(resume));
          return;
        }
        ++e.passes;
        admitted = true;
        lock.unlock();
        resume();
      });
      if (admitted) return Pass(this, std::move(key), false);
    }
  }
  if (Suspender::MustNotBlock()) {
    std::optional<Pass> pass = TryEnter(key);
    return pass ? std::move(*pass) : Pass();
  }
  std::unique_lock<std::mutex> lock(mu_);
  Entry* e = &entries_[key];
  while (e->held || e->wanted) {
    cv_.wait(lock);
    e = &entries_[key];  // (rehashing moves nothing, but the entry may have been erased)
  }
  ++e->passes;
  return Pass(this, std::move(key), false);
}

WorkspaceGate::Pass WorkspaceGate::Hold(std::string_view ws) {
  std::string key(ws);
  std::unique_lock<std::mutex> lock(mu_);
  Entry* e = &entries_[key];
  while (e->held || e->wanted) {
    cv_.wait(lock);
    e = &entries_[key];
  }
  e->wanted = true;
  turns_.fetch_add(1, std::memory_order_acq_rel);
  while (e->passes > 0) {
    cv_.wait(lock);
    e = &entries_[key];
  }
  e->wanted = false;
  e->held = true;
  return Pass(this, std::move(key), true);
}

std::optional<WorkspaceGate::Pass> WorkspaceGate::TryEnter(std::string_view ws) {
  std::string key(ws);
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[key];
  if (e.held || e.wanted) return std::nullopt;
  ++e.passes;
  return Pass(this, std::move(key), false);
}

void WorkspaceGate::Return(const std::string& ws, bool held) {
  bool wake = false;
  std::vector<std::function<void()>> woken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(ws);
    if (it == entries_.end()) return;
    Entry& e = it->second;
    if (held) {
      e.held = false;
      turns_.fetch_add(1, std::memory_order_acq_rel);
      woken.swap(e.woken);
      wake = true;
    } else {
      --e.passes;
      wake = e.passes == 0 && e.wanted;
    }
    if (e.passes == 0 && !e.held && !e.wanted && e.woken.empty()) entries_.erase(it);
  }
  if (wake) cv_.notify_all();
  for (auto& resume : woken) resume();
}

}  // namespace cortex
