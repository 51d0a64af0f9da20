#include "core/log.h"

#include <poll.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>

namespace cortex {
namespace {

constexpr char kAccessLogger[] = "access";
constexpr size_t kAccessBufferBytes = 64 * 1024;
// A non-blocking stderr (a pipe its reader made so) that is full: how long one flush waits
// for room before its lines are dropped.
constexpr std::chrono::seconds kFullStderrWait{1};
std::shared_ptr<spdlog::logger> access_log;  // set by InitLogging, before any thread reads it

// stderr for a file or a pipe: access lines collect in memory and go out in one write
// (one write(2) per request was ~6% of a read's CPU); any other line, at any level, writes
// out everything before it and itself at once, so the order is kept and nothing but
// access lines ever waits.
class BufferedStderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  ~BufferedStderrSink() override {
    std::lock_guard<std::mutex> lock(mutex_);
    WriteOut();
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    buffer_.append(line.data(), line.size());
    if (msg.logger_name != kAccessLogger || buffer_.size() >= kAccessBufferBytes) WriteOut();
  }

  void flush_() override { WriteOut(); }

 private:
  // A full non-blocking stderr is waited on for room, up to kFullStderrWait per flush in
  // all (a reader that takes a little at a time cannot hold the sink, and so every request
  // that logs, for longer). After a wait that ran out, batches are dropped at once until
  // stderr takes a write again.
  void WriteOut() {
    const auto deadline = std::chrono::steady_clock::now() + kFullStderrWait;
    size_t done = 0;
    while (done < buffer_.size()) {
      ssize_t n = ::write(STDERR_FILENO, buffer_.data() + done, buffer_.size() - done);
      if (n > 0) {
        done += static_cast<size_t>(n);
        stalled_ = false;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !stalled_) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now());
        if (left.count() > 0) {
          pollfd room{STDERR_FILENO, POLLOUT, 0};
          int ready = ::poll(&room, 1, static_cast<int>(left.count()));
          if (ready > 0 || (ready < 0 && errno == EINTR)) continue;
        }
        stalled_ = true;
      }
      break;  // stderr is gone or stuck: drop the lines rather than block or spin
    }
    buffer_.clear();
  }

  std::string buffer_;
  bool stalled_ = false;  // the last wait for room ran out
};

}  // namespace

void InitLogging(const std::string& level) {
  spdlog::sink_ptr sink;
  if (isatty(STDERR_FILENO)) {
    sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  } else {
    sink = std::make_shared<BufferedStderrSink>();
  }
  auto make = [&](const char* name) {
    auto logger = std::make_shared<spdlog::logger>(name, sink);
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
    logger->set_level(spdlog::level::from_str(level));
    spdlog::register_logger(logger);
    return logger;
  };
  spdlog::set_default_logger(make("cortex"));
  access_log = make(kAccessLogger);
  spdlog::flush_every(std::chrono::seconds(1));
}

spdlog::logger& AccessLog() { return access_log ? *access_log : *spdlog::default_logger_raw(); }

}  // namespace cortex
