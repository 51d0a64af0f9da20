// Reading calendars over the network (libcurl): an iCalendar feed by GET (https://, http://,
// file://), or a CalDAV calendar collection (RFC 4791) by REPORT: a calendar-query with a
// time range that asks only for ETags, then a calendar-multiget for the events whose ETag
// changed. WebDAV's XML is read with libxml2.
#pragma once

#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"

namespace cortex {

// One `[[connectors.calendar]]` table (docs/connectors.md).
struct CalendarAccount {
  std::string workspace;
  std::string url;       // an .ics feed (https://, http://, file://) or a CalDAV collection
  std::string protocol;  // "ics" or "caldav" (config.cc fills it in from the URL if unset)
  std::string username;  // optional: HTTP Basic login
  std::string password;  // from password, password_file or password_env
  std::string ca_file;   // extra CAs to trust (PEM)
  std::vector<std::string> focus = {"focus", "deep work"};  // lowercase title words
  std::vector<std::string> self;  // lowercase addresses of the person (not counterparties)
  int past_days = 30;             // occurrences kept from this far back
  int future_days = 90;           // and this far ahead
  int poll_seconds = 300;         // cortex serve: between passes
  int timeout_seconds = 30;       // connect timeout; a transfer stalled this long fails
  // "[username@]host/path" (or the file's path): how logs, errors and the store name it.
  std::string Name() const;
};

// One event resource of a CalDAV collection.
struct CalendarResource {
  std::string href;
  std::string etag;
  std::string data;  // iCalendar text (empty when only the ETag was asked for)
};

// The feed's text. Errors name the account and never hold the password: Unauthorized for a
// refused login (HTTP 401/403), NotFound for 404, Unavailable for an unreachable host, a
// TLS failure, a timeout or a 5xx, InvalidArgument for a body over the limit.
Result<std::string> FetchFeed(const CalendarAccount& account);

// The collection's event resources with an occurrence in [from, to): href and ETag only.
Result<std::vector<CalendarResource>> ListCalendarEvents(const CalendarAccount& account,
                                                         TimePoint from, TimePoint to);

// The resources `hrefs` with their data (calendar-multiget, in batches).
Result<std::vector<CalendarResource>> GetCalendarEvents(const CalendarAccount& account,
                                                        const std::vector<std::string>& hrefs);

// A WebDAV multistatus body's resources (href, getetag, calendar-data of a 200 propstat).
// Exposed for tests and fuzzing.
Result<std::vector<CalendarResource>> ParseMultistatus(const std::string& xml);

}  // namespace cortex
