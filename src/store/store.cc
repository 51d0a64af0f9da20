#include "store/store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace cortex {

Status Store::WriteInSteps(const std::string& /*ws_id*/, const Step& step) {
  return Write([&](WriteTx& tx) {
    for (int i = 0;; ++i) {
      auto done = step(tx, i);
      if (!done.ok()) return done.status();
      if (*done) return Status::Ok();
    }
  });
}

bool IsPostgresUrl(const std::string& where) {
  return where.rfind("postgresql://", 0) == 0 || where.rfind("postgres://", 0) == 0;
}

Result<std::unique_ptr<Store>> OpenStore(const std::string& where) {
  return IsPostgresUrl(where) ? OpenPostgresStore(where) : OpenSqliteStore(where);
}

Result<std::unique_ptr<Store>> OpenExistingStore(const std::string& where) {
  if (!IsPostgresUrl(where)) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::path(where) / "cortex.db", ec)) {
      return Status::NotFound("there is no Cortex data in " + where +
                              " (no cortex.db): check --data; `cortex demo --data " + where +
                              "` or `cortex serve --data " + where + "` creates it");
    }
  }
  return OpenStore(where);
}

Result<ServeLock> ServeLock::Take(const std::string& where) {
  if (IsPostgresUrl(where)) return ServeLock(-1);
  const std::string path = (std::filesystem::path(where) / "serve.lock").string();
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::InvalidArgument("cannot open " + path + ": " + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char pid[32] = {0};
    ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) {
      return Status::InvalidArgument("cannot lock " + path + ": " + std::strerror(err));
    }
    std::string who = n > 0 ? " (pid " + std::string(pid, strcspn(pid, "\n")) + ")" : "";
    return Status::Conflict(
        "another cortex serve" + who + " already serves " + where +
        ": one server per SQLite data directory. Stop it, or give this one its own --data; "
        "several instances share a PostgreSQL store (--database, README \"Several instances "
        "on PostgreSQL\")");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without the pid; a second server then names no pid.
  }
  return ServeLock(fd);
}

ServeLock::~ServeLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

std::string RedactedLocation(const std::string& where) {
  if (!IsPostgresUrl(where)) return where;
  // postgresql://user:password@host/db: hide what lies between the user's ':' and '@'.
  size_t scheme = where.find("://") + 3;
  size_t at = where.find('@', scheme);
  if (at == std::string::npos) return where;
  size_t colon = where.find(':', scheme);
  if (colon == std::string::npos || colon > at) return where;
  return where.substr(0, colon + 1) + "***" + where.substr(at);
}

}  // namespace cortex
