// iCalendar (RFC 5545) read with libical: a feed's or a CalDAV resource's events as the
// occurrences that start in a window, recurrence expanded (RRULE, RDATE, EXDATE, and
// RECURRENCE-ID overrides), times resolved through the calendar's VTIMEZONEs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"

namespace cortex {

// One occurrence of an event.
struct CalendarOccurrence {
  std::string uid;
  std::string recurrence_id;  // a recurring event's instance: its original start, UTC
                              // (RFC 3339); "" for a single event
  TimePoint start;
  TimePoint end;  // after start
  std::string title;
  bool focus = false;             // the title holds one of the focus words
  std::string counterparty;       // an attendee or organizer not among `self` ("" if none)
  std::string counterparty_name;  // their CN, if given
  // "<uid>|<recurrence id>": what stays the same when the event is moved or edited.
  std::string Key() const { return uid + "|" + recurrence_id; }
};

struct CalendarWindow {
  TimePoint from;  // occurrences that start in [from, to)
  TimePoint to;
  std::vector<std::string> focus;  // lowercase title words that make a focus block
  std::vector<std::string> self;   // lowercase addresses that are the person's own
  size_t max_occurrences = 20000;  // more is refused (a runaway RRULE)
};

struct CalendarParse {
  std::vector<CalendarOccurrence> occurrences;
  size_t skipped = 0;  // events not stored: all-day, free (TRANSP:TRANSPARENT), cancelled,
                       // without a start or a duration
};

// The occurrences of `ics`'s VEVENTs that start in the window, by start. InvalidArgument
// for text that is not iCalendar, or for more than window.max_occurrences occurrences.
Result<CalendarParse> ExpandCalendar(const std::string& ics, const CalendarWindow& window);

}  // namespace cortex
