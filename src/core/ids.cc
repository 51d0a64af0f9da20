#include "core/ids.h"

#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <stdexcept>

#include "core/time.h"

namespace cortex {
namespace {

constexpr char kCrockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

struct UlidState {
  std::mutex mu;
  int64_t last_ms = -1;
  std::array<uint8_t, 10> random{};  // the 80 random bits
  // RAND_bytes output not yet used: one call per 25 ids rather than one per id (a call
  // was ~2% of a read's instructions).
  std::array<uint8_t, 25 * 10> pool{};
  size_t pool_used = pool.size();
};

}  // namespace

std::string NewId(std::string_view prefix, const Clock& clock) {
  static UlidState state;
  uint8_t bytes[16];
  {
    std::lock_guard<std::mutex> lock(state.mu);
    int64_t ms = ToUnixMillis(clock.Now());
    if (ms <= state.last_ms) {
      // Same (or an earlier, fixed-clock) millisecond: keep the time, bump the random part
      // so ids stay strictly increasing.
      ms = state.last_ms;
      for (int i = 9; i >= 0 && ++state.random[i] == 0; --i) {
      }
    } else {
      if (state.pool_used == state.pool.size()) {
        if (RAND_bytes(state.pool.data(), static_cast<int>(state.pool.size())) != 1) {
          throw std::runtime_error("RAND_bytes failed");
        }
        state.pool_used = 0;
      }
      std::copy_n(state.pool.begin() + static_cast<std::ptrdiff_t>(state.pool_used),
                  state.random.size(), state.random.begin());
      state.pool_used += state.random.size();
      state.random[0] &= 0x7f;  // leave headroom so increments never overflow 80 bits
      state.last_ms = ms;
    }
    for (int i = 0; i < 6; ++i) bytes[i] = static_cast<uint8_t>(ms >> (8 * (5 - i)));
    for (int i = 0; i < 10; ++i) bytes[6 + i] = state.random[i];
  }
  // 128 bits -> 26 characters, 5 bits at a time (the first character carries 3 bits).
  std::string out(prefix);
  out.reserve(prefix.size() + 26);
  unsigned __int128 v = 0;
  for (uint8_t b : bytes) v = (v << 8) | b;
  char chars[26];
  for (int i = 25; i >= 0; --i) {
    chars[i] = kCrockford[static_cast<int>(v & 31)];
    v >>= 5;
  }
  out.append(chars, 26);
  return out;
}

std::string NewIdAfter(std::string_view prefix, const Clock& clock, std::string_view previous) {
  std::string id = NewId(prefix, clock);
  if (id > previous || !IsId(previous, prefix)) return id;
  std::string next(previous);
  for (size_t i = next.size(); i-- > prefix.size();) {  // add one, base 32, with carry
    const char* digit = std::find(kCrockford, kCrockford + 32, next[i]);
    if (*digit != 'Z') {
      next[i] = digit[1];
      return next;
    }
    next[i] = '0';
  }
  return id;  // all 'Z': not a ULID IsId accepts, so unreachable
}

std::string IdFloor(std::string_view prefix, TimePoint t) {
  int64_t ms = std::max<int64_t>(0, ToUnixMillis(t));
  std::string out(prefix);
  char chars[10];
  for (int i = 9; i >= 0; --i) {  // 48 bits of time in the first 10 characters
    chars[i] = kCrockford[ms & 31];
    ms >>= 5;
  }
  out.append(chars, 10);
  out.append(16, '0');
  return out;
}

bool IsId(std::string_view id, std::string_view prefix) {
  if (id.size() != prefix.size() + 26 || id.substr(0, prefix.size()) != prefix) return false;
  std::string_view body = id.substr(prefix.size());
  if (body[0] > '7') return false;
  for (char c : body) {
    bool ok = false;
    for (const char* p = kCrockford; *p; ++p) ok |= (*p == c);
    if (!ok) return false;
  }
  return true;
}

}  // namespace cortex
