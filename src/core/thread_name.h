// Names a thread, as `top -H`, `ps -L`, `perf` and /proc/<pid>/task/*/comm show it.
#pragma once

#include <pthread.h>

#include <thread>

namespace cortex {

// Linux keeps at most 15 characters; longer names are cut.
inline void NameThread(pthread_t thread, const char* name) {
  char cut[16] = {};
  for (int i = 0; i < 15 && name[i] != '\0'; ++i) cut[i] = name[i];
  pthread_setname_np(thread, cut);
}

// Named by the thread that started it, so the name is there as soon as the thread is.
inline void NameThread(std::thread& thread, const char* name) {
  NameThread(thread.native_handle(), name);
}

}  // namespace cortex
