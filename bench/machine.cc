// cortex-machine: what this machine charges for the kernel work a request does. A system
// call, a 4 KiB pread from the page cache, an fcntl lock (SQLite's WAL read lock), waking
// another thread, and a commit's flush (WAL-sized frames written, then fdatasync). Each
// figure is the median of repeated timings. They explain why one build's figures differ
// between machines (docs/performance.md); bench/run prints them under its table.
//
//   build/cortex-machine [DIR]    # DIR (default /tmp) holds a 4 MiB scratch file, unlinked
//                                 # as soon as it is open, so nothing is left behind
#include <fcntl.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

namespace {

constexpr int kRounds = 15;
constexpr off_t kFileBytes = 4 << 20;
constexpr size_t kFrameBytes = 4096 + 24;  // a WAL frame: header and one page

int fd = -1;

void Check(bool ok, const char* what) {
  if (ok) return;
  std::perror(what);
  std::exit(1);
}

// Median nanoseconds per operation over kRounds timings of `n` operations each.
double Time(const std::function<void(int)>& op, int n) {
  std::array<double, kRounds> per_op;
  for (double& v : per_op) {
    auto start = std::chrono::steady_clock::now();
    op(n);
    v = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
        n;
  }
  std::nth_element(per_op.begin(), per_op.begin() + kRounds / 2, per_op.end());
  return per_op[kRounds / 2];
}

void Syscalls(int n) {
  for (int i = 0; i < n; ++i) syscall(SYS_getppid);
}

void Preads(int n) {
  char page[4096];
  for (int i = 0; i < n; ++i) {
    Check(pread(fd, page, sizeof page, off_t{i % 1024} * 4096) == sizeof page, "pread");
  }
}

void Locks(int n) {
  struct flock lock = {};
  lock.l_whence = SEEK_SET;
  lock.l_start = 120;
  lock.l_len = 1;
  for (int i = 0; i < n; ++i) {
    lock.l_type = i % 2 ? F_UNLCK : F_RDLCK;
    Check(fcntl(fd, F_SETLK, &lock) == 0, "fcntl");
  }
}

// n round trips: this thread wakes another, which wakes it back (two wakes each).
void RoundTrips(int n) {
  sem_t ping, pong;
  Check(sem_init(&ping, 0, 0) == 0 && sem_init(&pong, 0, 0) == 0, "sem_init");
  std::thread other([&] {
    for (int i = 0; i < n; ++i) {
      sem_wait(&ping);
      sem_post(&pong);
    }
  });
  for (int i = 0; i < n; ++i) {
    sem_post(&ping);
    sem_wait(&pong);
  }
  other.join();
  sem_destroy(&ping);
  sem_destroy(&pong);
}

// n commits of `frames` frames each, overwriting the file in turn, each flushed.
void Flushes(int frames, int n) {
  static char frame[kFrameBytes];
  static off_t at = 0;
  for (int i = 0; i < n; ++i) {
    for (int f = 0; f < frames; ++f) {
      if (at + static_cast<off_t>(kFrameBytes) > kFileBytes) at = 0;
      Check(pwrite(fd, frame, kFrameBytes, at) == static_cast<ssize_t>(kFrameBytes), "pwrite");
      at += kFrameBytes;
    }
    Check(fdatasync(fd) == 0, "fdatasync");
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string path =
      std::string(argc > 1 ? argv[1] : "/tmp") + "/cortex-machine." + std::to_string(getpid());
  fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  Check(fd >= 0, path.c_str());
  Check(unlink(path.c_str()) == 0, path.c_str());
  static char zeros[1 << 16];
  for (off_t at = 0; at < kFileBytes; at += sizeof zeros) {
    Check(pwrite(fd, zeros, sizeof zeros, at) == sizeof zeros, "pwrite");
  }
  Check(fsync(fd) == 0, "fsync");

  std::printf("system call (getppid)          %7.0f ns\n", Time(Syscalls, 20000));
  std::printf("pread of 4 KiB (page cache)    %7.0f ns\n", Time(Preads, 20000));
  std::printf("fcntl lock or unlock           %7.0f ns\n", Time(Locks, 20000));
  std::printf("waking another thread          %7.0f ns\n", Time(RoundTrips, 5000) / 2);
  for (int frames : {1, 8, 64}) {
    double ns = Time([frames](int n) { Flushes(frames, n); }, 10);
    std::printf("%2d frame(s) written and synced %7.0f µs\n", frames, ns / 1000);
  }
  close(fd);
  return 0;
}
