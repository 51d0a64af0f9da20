#include "connectors/ical.h"

#include <libical/ical.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <set>

#include "core/time.h"

namespace cortex {
namespace {

struct CalendarDeleter {
  void operator()(icalcomponent* c) const { icalcomponent_free(c); }
};

icaltimezone* Utc() { return icaltimezone_get_utc_timezone(); }

// A resolved time as seconds since the epoch: its zone (a VTIMEZONE of the calendar, a
// built-in one, or UTC); a floating time (no zone) is read as UTC.
time_t Seconds(const icaltimetype& t) {
  const icaltimezone* zone = t.zone != nullptr ? t.zone : Utc();
  return icaltime_as_timet_with_zone(t, zone);
}

TimePoint FromSeconds(time_t s) { return FromUnixMillis(int64_t{s} * 1000); }

// 1970 to 2200: what a TimePoint holds with room to spare (a year 40522024 overflowed it).
bool InRange(time_t s) { return s >= 0 && s < time_t{7258118400}; }

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "mailto:a@b" -> "a@b" (lowercase); "" for any other kind of address.
std::string MailAddress(const char* value) {
  if (value == nullptr) return "";
  std::string v = value;
  if (Lower(v.substr(0, 7)) != "mailto:") return "";
  return Lower(v.substr(7));
}

std::string Text(const char* s) { return s == nullptr ? "" : s; }

// The first organizer or attendee who is not the person; their address and name.
std::pair<std::string, std::string> Counterparty(icalcomponent* ev,
                                                 const std::vector<std::string>& self) {
  for (icalproperty_kind kind : {ICAL_ORGANIZER_PROPERTY, ICAL_ATTENDEE_PROPERTY}) {
    for (icalproperty* p = icalcomponent_get_first_property(ev, kind); p != nullptr;
         p = icalcomponent_get_next_property(ev, kind)) {
      std::string address = MailAddress(icalproperty_get_value_as_string(p));
      if (address.empty() || std::find(self.begin(), self.end(), address) != self.end()) {
        continue;
      }
      icalparameter* cn = icalproperty_get_first_parameter(p, ICAL_CN_PARAMETER);
      return {address, cn != nullptr ? Text(icalparameter_get_cn(cn)) : ""};
    }
  }
  return {};
}

// An override's RECURRENCE-ID, its TZID resolved as DTSTART's is (through the calendar's
// VTIMEZONE), so that it names the instance the series' expansion produces.
icaltimetype RecurrenceId(icalcomponent* ev) {
  icalproperty* p = icalcomponent_get_first_property(ev, ICAL_RECURRENCEID_PROPERTY);
  return p == nullptr ? icaltime_null_time() : icalproperty_get_datetime_with_component(p, ev);
}

// Whether the person (an attendee among `self`) has declined the event: its time is free.
bool DeclinedBySelf(icalcomponent* ev, const std::vector<std::string>& self) {
  for (icalproperty* p = icalcomponent_get_first_property(ev, ICAL_ATTENDEE_PROPERTY);
       p != nullptr; p = icalcomponent_get_next_property(ev, ICAL_ATTENDEE_PROPERTY)) {
    std::string address = MailAddress(icalproperty_get_value_as_string(p));
    if (std::find(self.begin(), self.end(), address) == self.end()) continue;
    icalparameter* partstat = icalproperty_get_first_parameter(p, ICAL_PARTSTAT_PARAMETER);
    if (partstat != nullptr && icalparameter_get_partstat(partstat) == ICAL_PARTSTAT_DECLINED) {
      return true;
    }
  }
  return false;
}

bool HasAttendees(icalcomponent* ev) {
  return icalcomponent_get_first_property(ev, ICAL_ATTENDEE_PROPERTY) != nullptr;
}

struct Expansion {
  const CalendarWindow* window;
  CalendarParse* out;
  const std::set<time_t>* overridden;  // instances that RECURRENCE-ID components replace
  CalendarOccurrence proto;
  bool too_many = false;
};

void AddInstance(icalcomponent*, struct icaltime_span* span, void* data) {
  auto* x = static_cast<Expansion*>(data);
  if (x->overridden != nullptr && x->overridden->count(span->start)) return;
  if (!InRange(span->start) || !InRange(span->end) || span->end <= span->start) return;
  TimePoint start = FromSeconds(span->start);
  if (start < x->window->from || start >= x->window->to) return;
  if (x->out->occurrences.size() >= x->window->max_occurrences) {
    x->too_many = true;
    return;
  }
  CalendarOccurrence o = x->proto;
  o.start = start;
  o.end = FromSeconds(span->end);
  o.recurrence_id = FormatTime(start);
  x->out->occurrences.push_back(std::move(o));
}

}  // namespace

Result<CalendarParse> ExpandCalendar(const std::string& ics, const CalendarWindow& window) {
  std::unique_ptr<icalcomponent, CalendarDeleter> root(icalparser_parse_string(ics.c_str()));
  if (root == nullptr || (icalcomponent_isa(root.get()) != ICAL_VCALENDAR_COMPONENT &&
                          icalcomponent_isa(root.get()) != ICAL_VEVENT_COMPONENT)) {
    return Status::InvalidArgument("not an iCalendar document (no VCALENDAR)");
  }
  std::vector<icalcomponent*> events;
  if (icalcomponent_isa(root.get()) == ICAL_VEVENT_COMPONENT) {
    events.push_back(root.get());
  } else {
    for (icalcomponent* c = icalcomponent_get_first_component(root.get(), ICAL_VEVENT_COMPONENT);
         c != nullptr; c = icalcomponent_get_next_component(root.get(), ICAL_VEVENT_COMPONENT)) {
      events.push_back(c);
    }
  }
  // RECURRENCE-ID components replace (or cancel) one instance of their UID's series.
  std::map<std::string, std::set<time_t>> overridden;
  for (icalcomponent* ev : events) {
    if (icalcomponent_get_first_property(ev, ICAL_RECURRENCEID_PROPERTY) == nullptr) continue;
    overridden[Text(icalcomponent_get_uid(ev))].insert(Seconds(RecurrenceId(ev)));
  }
  CalendarParse out;
  icaltimetype from = icaltime_from_timet_with_zone(
      static_cast<time_t>(ToUnixMillis(window.from) / 1000), 0, Utc());
  icaltimetype to = icaltime_from_timet_with_zone(
      static_cast<time_t>(ToUnixMillis(window.to) / 1000 + 1), 0, Utc());
  for (icalcomponent* ev : events) {
    icaltimetype dtstart = icalcomponent_get_dtstart(ev);
    if (icaltime_is_null_time(dtstart) || dtstart.is_date ||
        icalcomponent_get_status(ev) == ICAL_STATUS_CANCELLED) {
      ++out.skipped;
      continue;
    }
    icalproperty* transp = icalcomponent_get_first_property(ev, ICAL_TRANSP_PROPERTY);
    if ((transp != nullptr && icalproperty_get_transp(transp) == ICAL_TRANSP_TRANSPARENT) ||
        DeclinedBySelf(ev, window.self)) {
      ++out.skipped;  // free time: an override declined or freed still hides its instance
      continue;
    }
    icaltimetype dtend = icalcomponent_get_dtend(ev);  // DTEND, or DTSTART + DURATION
    if (icaltime_is_null_time(dtend) || !InRange(Seconds(dtstart)) || !InRange(Seconds(dtend)) ||
        Seconds(dtend) <= Seconds(dtstart)) {
      ++out.skipped;
      continue;
    }
    CalendarOccurrence proto;
    proto.uid = Text(icalcomponent_get_uid(ev));
    if (proto.uid.empty()) {
      ++out.skipped;  // nothing to know it by when it changes
      continue;
    }
    proto.title = Text(icalcomponent_get_summary(ev));
    std::string title = Lower(proto.title);
    for (const std::string& word : window.focus) {
      if (title.find(word) != std::string::npos) proto.focus = true;
    }
    if (HasAttendees(ev)) {
      auto [address, name] = Counterparty(ev, window.self);
      proto.counterparty = address;
      proto.counterparty_name = name;
    }
    Expansion x{&window, &out, nullptr, proto, false};
    if (icalcomponent_get_first_property(ev, ICAL_RECURRENCEID_PROPERTY) != nullptr) {
      // One instance, moved or edited: keyed by the instance it replaces.
      TimePoint start = FromSeconds(Seconds(dtstart));
      time_t replaces = Seconds(RecurrenceId(ev));
      if (!InRange(replaces)) {
        ++out.skipped;
        continue;
      }
      if (start >= window.from && start < window.to) {
        CalendarOccurrence o = proto;
        o.start = start;
        o.end = FromSeconds(Seconds(dtend));
        o.recurrence_id = FormatTime(FromSeconds(replaces));
        out.occurrences.push_back(std::move(o));
      }
      continue;
    }
    bool recurring = icalcomponent_get_first_property(ev, ICAL_RRULE_PROPERTY) != nullptr ||
                     icalcomponent_get_first_property(ev, ICAL_RDATE_PROPERTY) != nullptr;
    if (!recurring) {
      TimePoint start = FromSeconds(Seconds(dtstart));
      if (start >= window.from && start < window.to) {
        CalendarOccurrence o = proto;
        o.start = start;
        o.end = FromSeconds(Seconds(dtend));
        out.occurrences.push_back(std::move(o));
      }
      continue;
    }
    auto it = overridden.find(proto.uid);
    x.overridden = it == overridden.end() ? nullptr : &it->second;
    icalcomponent_foreach_recurrence(ev, from, to, AddInstance, &x);
    if (x.too_many) {
      return Status::InvalidArgument("the calendar holds more than " +
                                     std::to_string(window.max_occurrences) +
                                     " occurrences in the window");
    }
  }
  if (out.occurrences.size() > window.max_occurrences) {
    return Status::InvalidArgument("the calendar holds more than " +
                                   std::to_string(window.max_occurrences) +
                                   " occurrences in the window");
  }
  std::stable_sort(
      out.occurrences.begin(), out.occurrences.end(),
      [](const CalendarOccurrence& a, const CalendarOccurrence& b) { return a.start < b.start; });
  return out;
}

}  // namespace cortex
