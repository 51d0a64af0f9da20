// One error type for the whole core. Engines and the store return Status or Result<T>;
// the protocol layer maps codes to JSON-RPC errors, the tool layer to tool error bodies,
// and only the transports map them to HTTP statuses.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace cortex {

enum class Code {
  kOk,
  kInvalidArgument,  // the caller's input is wrong; nothing changed
  kNotFound,         // no such thing in the caller's workspace
  kUnauthorized,     // unknown token, or a token without the needed scope
  kConflict,         // the thing exists, or is in a state that forbids the operation
  kUnavailable,      // transient: database busy, shutting down; retry may succeed
  kCancelled,        // the caller gave the call up, and what it had done is undone
  kInternal,         // a bug or an unexpected library failure
};

// Stable lowercase name of a code, e.g. "not_found".
const char* CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return {Code::kInvalidArgument, std::move(msg)};
  }
  static Status NotFound(std::string msg) { return {Code::kNotFound, std::move(msg)}; }
  static Status Unauthorized(std::string msg) { return {Code::kUnauthorized, std::move(msg)}; }
  static Status Conflict(std::string msg) { return {Code::kConflict, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {Code::kUnavailable, std::move(msg)}; }
  static Status Internal(std::string msg) { return {Code::kInternal, std::move(msg)}; }
  static Status Cancelled(std::string msg) { return {Code::kCancelled, std::move(msg)}; }

  // Returns true iff the status indicates success.
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  // REQUIRES: ok()
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  // On a temporary, hands the value out (so `for (x : *Make())` does not dangle).
  T operator*() && { return std::move(*value_); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace cortex

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define CORTEX_RETURN_IF_ERROR(expr) \
  do {                               \
    ::cortex::Status _st = (expr);   \
    if (!_st.ok()) return _st;       \
  } while (0)
