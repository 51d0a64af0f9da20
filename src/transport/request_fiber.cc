#include "transport/request_fiber.h"

#include <boost/asio/post.hpp>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORTEX_ASAN 1
#endif
#elif defined(__SANITIZE_ADDRESS__)
#define CORTEX_ASAN 1
#endif
#ifdef CORTEX_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace cortex {

namespace net = boost::asio;
namespace ctx = boost::context;

namespace {

// AddressSanitizer keeps track of the stack a thread runs on; a fiber switch must tell it
// (before: where the thread goes; after: where it came from). No-ops in other builds.
struct StackSwitch {
  static void Start(void** save, const void* bottom, size_t size) {
#ifdef CORTEX_ASAN
    __sanitizer_start_switch_fiber(save, bottom, size);
#else
    (void)save, (void)bottom, (void)size;
#endif
  }
  static void Finish(void* saved, const void** bottom_old, size_t* size_old) {
#ifdef CORTEX_ASAN
    __sanitizer_finish_switch_fiber(saved, bottom_old, size_old);
#else
    (void)saved, (void)bottom_old, (void)size_old;
#endif
  }
};

}  // namespace

RequestFiber::RequestFiber(net::io_context& ioc, StackPool& stacks, int& fibers,
                           std::function<void()> body, std::function<void()> done)
    : ioc_(ioc), fibers_(fibers), body_(std::move(body)), done_(std::move(done)) {
  fiber_ = ctx::fiber(std::allocator_arg, StackPool::Allocator{&stacks, &stack_},
                      [this](ctx::fiber&& worker_side) {
                        StackSwitch::Finish(nullptr, &worker_bottom_, &worker_size_);
                        worker_side_ = std::move(worker_side);
                        body_();
                        StackSwitch::Start(nullptr, worker_bottom_, worker_size_);  // ends
                        return std::move(worker_side_);
                      });
  ++fibers_;
}

void RequestFiber::Run() {
  {
    Suspender::Scope scope(this);
    StackSwitch::Start(&worker_fake_stack_, static_cast<char*>(stack_.sp) - stack_.size,
                       stack_.size);
    fiber_ = std::move(fiber_).resume();
    StackSwitch::Finish(worker_fake_stack_, nullptr, nullptr);
  }
  if (fiber_) return;  // suspended: Suspend() posts the next Run()
  --fibers_;
  auto done = std::move(done_);
  done();  // may destroy this: nothing here is touched after it
}

void RequestFiber::Suspend(const std::function<void(Resume)>& start) {
  start([this] { net::post(ioc_, [this] { Run(); }); });
  StackSwitch::Start(&fake_stack_, worker_bottom_, worker_size_);
  worker_side_ = std::move(worker_side_).resume();  // back in Run() once resumed
  // Resumed, maybe on another thread (the shutdown drain): that thread's stack is the
  // worker side now.
  StackSwitch::Finish(fake_stack_, &worker_bottom_, &worker_size_);
}

}  // namespace cortex
