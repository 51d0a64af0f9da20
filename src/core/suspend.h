// Lets a call that waits for another thread give its own thread back while it waits.
//
// The HTTP server runs small write requests as fibers on its I/O threads
// (transport/http_server.cc). While such a request runs, Suspender::Current() is its
// suspender, and a call that would block until another thread has finished something
// (SqliteStore::Write, until the batch holding the write is durable) suspends the request
// instead: the I/O thread serves its other connections meanwhile. Everywhere else
// Current() is null and such a call blocks its thread as it always did.
//
// Code that runs while Current() is set must not block on anything but a Suspend(): no
// network calls, no locks held across a Suspend(), no thread-local state kept across one.
#pragma once

#include <functional>

namespace cortex {

class Suspender {
 public:
  using Resume = std::function<void()>;

  // Calls `start(resume)` and returns once `resume()` has been called. `resume` may be
  // called from any thread, exactly once, even before `start` returns.
  virtual void Suspend(const std::function<void(Resume)>& start) = 0;

  // The running request's suspender, or null: block (unless MustNotBlock()).
  static Suspender* Current();

  // True on the HTTP server's I/O threads, where a request that is not a fiber (a read
  // served inline) must not wait at all: what would wait gives up instead.
  static bool MustNotBlock();
  static void SetMustNotBlock(bool v);

  // While it lives, Current() is `s` on this thread (the fiber runner sets it around
  // each stretch a request runs).
  class Scope {
   public:
    explicit Scope(Suspender* s);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Suspender* previous_;
  };

 protected:
  ~Suspender() = default;
};

}  // namespace cortex
