// Names the calling thread, as `top -H`, `perf` and /proc/<pid>/task/*/comm show it.
#pragma once

#include <pthread.h>

namespace cortex {

// Linux keeps at most 15 characters; longer names are cut.
inline void SetThreadName(const char* name) {
  char cut[16] = {};
  for (int i = 0; i < 15 && name[i] != '\0'; ++i) cut[i] = name[i];
  pthread_setname_np(pthread_self(), cut);
}

}  // namespace cortex
