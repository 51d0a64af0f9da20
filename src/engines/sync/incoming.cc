#include "engines/sync/incoming.h"

#include "engines/config.h"
#include "engines/sync/calendar_sync.h"
#include "engines/sync/mail_sync.h"

namespace cortex {

std::vector<std::unique_ptr<IncomingSource>> IncomingSources(const EngineConfig& config) {
  std::vector<std::unique_ptr<IncomingSource>> sources;
  for (const ImapAccount& account : config.imap) {
    sources.push_back(std::make_unique<MailSource>(account));
  }
  for (const CalendarAccount& account : config.calendars) {
    sources.push_back(std::make_unique<CalendarSource>(account));
  }
  return sources;
}

}  // namespace cortex
