#include "core/time.h"

#include "core/json_text.h"

namespace cortex {
namespace {

bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int y, int m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

}  // namespace

int64_t ToUnixMillis(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

TimePoint FromUnixMillis(int64_t ms) {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::milliseconds(ms)));
}

// Civil time by arithmetic (std::chrono's calendar): glibc's gmtime_r takes a process-wide
// lock, and snprintf of seven fields was ~2% of a read's instructions; a list of decisions
// formats a few times per item.
std::string FormatTime(TimePoint t) {
  namespace chr = std::chrono;
  int64_t ms = ToUnixMillis(t);
  int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  int millis = static_cast<int>(ms - secs * 1000);
  chr::sys_seconds at{chr::seconds{secs}};
  chr::sys_days day = chr::floor<chr::days>(at);
  chr::year_month_day ymd{day};
  int64_t in_day = (at - day).count();
  // TimePoint counts nanoseconds, so years stay within 1677-2262: always four digits.
  char buf[32];
  char* p = buf;
  auto put = [&p](int64_t v, int width) {
    for (int i = width - 1; i >= 0; --i, v /= 10) p[i] = static_cast<char>('0' + v % 10);
    p += width;
  };
  put(static_cast<int>(ymd.year()), 4);
  *p++ = '-';
  put(static_cast<unsigned>(ymd.month()), 2);
  *p++ = '-';
  put(static_cast<unsigned>(ymd.day()), 2);
  *p++ = 'T';
  put(in_day / 3600, 2);
  *p++ = ':';
  put(in_day / 60 % 60, 2);
  *p++ = ':';
  put(in_day % 60, 2);
  if (millis != 0) {
    *p++ = '.';
    put(millis, 3);
  }
  *p++ = 'Z';
  return std::string(buf, p);
}

bool InTimeRange(TimePoint t) { return ParseTime(FormatTime(t)).ok(); }

Result<TimePoint> ParseTime(std::string_view s) {
  auto bad = [&] {
    return Status::InvalidArgument("'" + Utf8Prefix(s, 40) +
                                   "' is not an RFC 3339 time like 2026-05-12T13:24:00Z");
  };
  int y, mo, d, h, mi, sec;
  if (s.size() < 20 || !Digits(s, 0, 4, &y) || s[4] != '-' || !Digits(s, 5, 2, &mo) ||
      s[7] != '-' || !Digits(s, 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
      !Digits(s, 11, 2, &h) || s[13] != ':' || !Digits(s, 14, 2, &mi) || s[16] != ':' ||
      !Digits(s, 17, 2, &sec)) {
    return bad();
  }
  // TimePoint counts nanoseconds in 64 bits: it ends in 2262.
  if (y < 1970 || y > 2200 || mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo) || h > 23 ||
      mi > 59 || sec > 59) {
    return bad();
  }
  size_t pos = 19;
  int millis = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t start = pos;
    int scale = 100;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      millis += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start || pos - start > 9) return bad();
  }
  int offset_min = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!Digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, &om) || oh > 23 || om > 59) {
      return bad();
    }
    offset_min = (s[pos] == '+' ? 1 : -1) * (oh * 60 + om);
    pos += 6;
  } else {
    return bad();
  }
  if (pos != s.size()) return bad();
  // Days from civil (Howard Hinnant's algorithm).
  int yy = mo <= 2 ? y - 1 : y;
  int era = yy / 400;
  int yoe = yy - era * 400;
  int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  int64_t days = static_cast<int64_t>(era) * 146097 + doe - 719468;
  int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec - offset_min * 60;
  return FromUnixMillis(secs * 1000 + millis);
}

}  // namespace cortex
