#include "engines/sync/calendar_sync.h"

#include <spdlog/spdlog.h>

#include <map>
#include <set>

#include "core/crypto.h"
#include "core/json_text.h"
#include "core/limits.h"
#include "core/text.h"
#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/world/identifiers.h"
#include "engines/world/ingest.h"
#include "store/calendar.h"
#include "store/entities.h"
#include "store/episodes.h"

namespace cortex {

namespace {

constexpr size_t kMaxSubjectBytes = 500;  // ingest's limits (docs/ingest.md)
constexpr size_t kMaxThreadBytes = 200;
constexpr size_t kMaxSummaryBytes = 300;

// The occurrence's counterparty in normal form, or "" when it has none usable.
std::string Counterparty(const CalendarOccurrence& o) {
  if (o.counterparty.empty()) return "";
  auto ident = NormalizeIdentifier(o.counterparty);
  if (!ident.ok() || ident->front() == '@' || ident->front() == '+' || !IsValidUtf8(*ident)) {
    return "";
  }
  return *ident;
}

const char* Kind(const CalendarOccurrence& o) { return o.focus ? "calendar_block" : "meeting"; }

// What an episode of the occurrence says: a change to any of it is a new version.
std::string Fingerprint(const CalendarOccurrence& o) {
  return Sha256Hex(std::string(Kind(o)) + "\n" + FormatTime(o.start) + "\n" + FormatTime(o.end) +
                   "\n" + o.title + "\n" + Counterparty(o));
}

// The episode's external_id: a new one for each version, so an occurrence moved back where
// it was gets a new episode rather than its retracted one (docs/ingest.md).
std::string ExternalId(const CalendarOccurrence& o, const std::string& source, int64_t version) {
  return "cal:" + Sha256Hex(source + "\n" + o.Key() + "\n" + std::to_string(version) + "\n" +
                            Fingerprint(o));
}

}  // namespace

std::string CalendarSyncReport::Summary() const {
  std::string out = "added " + std::to_string(added);
  if (changed > 0) out += ", " + std::to_string(changed) + " moved or changed";
  if (removed > 0) out += ", " + std::to_string(removed) + " cancelled or removed";
  out += ", " + std::to_string(unchanged) + " unchanged";
  if (skipped > 0) out += ", " + std::to_string(skipped) + " skipped (all-day, free or cancelled)";
  if (fetched > 0) out += ", fetched " + std::to_string(fetched);
  return out;
}

IncomingEpisode CalendarEpisode(const CalendarOccurrence& o, const std::string& source,
                                int64_t version) {
  // Text from the calendar as UTF-8, whatever it held (ingest takes nothing else).
  const std::string raw_title = ValidUtf8(o.title);
  std::string title = raw_title.empty() ? "(untitled event)" : raw_title;
  std::string who = Counterparty(o);
  std::string summary =
      o.focus ? "Focus block: " + title
      : who.empty()
          ? title
          : title + " with " + (o.counterparty_name.empty() ? who : ValidUtf8(o.counterparty_name));
  std::string thread = "cal:" + o.uid;
  if (thread.size() > kMaxThreadBytes || !IsValidUtf8(thread)) {
    thread = "cal:sha256:" + Sha256Hex(o.uid);
  }
  IncomingEpisode ep;
  Episode& e = ep.episode;
  e.kind = Kind(o);
  e.occurred_at = o.start;
  e.ends_at = o.end;
  e.channel = "calendar";
  e.subject = Utf8Prefix(raw_title, kMaxSubjectBytes);
  e.summary = Utf8Prefix(summary, kMaxSummaryBytes);
  e.thread = thread;
  e.external_id = ExternalId(o, source, version);
  if (!o.focus) ep.counterparty = who;
  return ep;
}

namespace {

// The calendar's text as it stands: the feed, or the collection's events (only changed ones
// fetched), with what the pass then records of the collection.
struct CalendarTexts {
  std::vector<std::string> texts;
  std::vector<CalendarResource> fetched;  // CalDAV resources new or changed
  std::vector<std::string> gone;          // CalDAV hrefs no longer listed
};

Result<CalendarTexts> ReadCalendarTexts(Store& store, const std::string& ws,
                                        const std::string& source, const CalendarAccount& account,
                                        const CalendarWindow& window) {
  CalendarTexts out;
  if (account.protocol != "caldav") {
    auto feed = FetchFeed(account);
    if (!feed.ok()) return feed.status();
    out.texts.push_back(std::move(*feed));
    return out;
  }
  auto listed = ListCalendarEvents(account, window.from, window.to);
  if (!listed.ok()) return listed.status();
  std::map<std::string, CalendarResourceRow> cached;
  CORTEX_RETURN_IF_ERROR(store.Read([&](ReadTx& tx) -> Status {
    auto rows = tx.calendar().Resources(ws, source);
    if (!rows.ok()) return rows.status();
    for (CalendarResourceRow& r : *rows) cached[r.href] = std::move(r);
    return Status::Ok();
  }));
  std::vector<std::string> wanted;
  std::set<std::string> listed_hrefs;
  for (const CalendarResource& r : *listed) {
    listed_hrefs.insert(r.href);
    auto it = cached.find(r.href);
    if (it == cached.end() || it->second.etag != r.etag) {
      wanted.push_back(r.href);
    } else {
      out.texts.push_back(it->second.data);
    }
  }
  for (const auto& entry : cached) {
    if (!listed_hrefs.count(entry.first)) out.gone.push_back(entry.first);
  }
  if (!wanted.empty()) {
    auto got = GetCalendarEvents(account, wanted);
    if (!got.ok()) return got.status();
    out.fetched = std::move(*got);
  }
  for (const CalendarResource& r : out.fetched) out.texts.push_back(r.data);
  return out;
}

// The occurrences in `texts` as the calendar stands now, by key. An unreadable feed is an
// error naming the account (`name`); an unreadable CalDAV event is skipped.
Result<std::map<std::string, CalendarOccurrence>> ExpandOccurrences(
    const std::vector<std::string>& texts, const CalendarWindow& window,
    const CalendarAccount& account, const std::string& name, CalendarSyncReport* report) {
  std::map<std::string, CalendarOccurrence> current;
  for (const std::string& text : texts) {
    auto parsed = ExpandCalendar(text, window);
    if (!parsed.ok()) {
      if (account.protocol != "caldav") {
        return Status::InvalidArgument(name + ": " + parsed.status().message());
      }
      ++report->skipped;  // one unreadable event does not hide the rest of the collection
      spdlog::warn("{}: an event was not read: {}", name, parsed.status().message());
      continue;
    }
    report->skipped += parsed->skipped;
    for (CalendarOccurrence& o : parsed->occurrences) current.emplace(o.Key(), std::move(o));
  }
  return current;
}

// The difference between the calendar now and the connector's record of it: episodes to
// add, episodes to retract, the record to keep.
struct CalendarChanges {
  std::vector<IngestItem> items;  // new attendees first, then the episodes
  struct Added {
    CalendarOccurrenceRow row;
    std::string external_id;
  };
  std::vector<Added> added;
  std::vector<std::pair<std::string, std::string>> retract;  // episode id, reason
  std::vector<CalendarOccurrenceRow> put;
  std::vector<std::string> drop;
};

Result<CalendarChanges> DiffOccurrences(Store& store, const std::string& ws,
                                        const std::string& source,
                                        const std::map<std::string, CalendarOccurrence>& current,
                                        const std::map<std::string, CalendarOccurrenceRow>& stored,
                                        TimePoint now, TimePoint window_from,
                                        CalendarSyncReport* report) {
  CalendarChanges changes;
  std::vector<IncomingEpisode> episodes;
  std::set<std::string> named;  // counterparties looked at
  for (const auto& [key, o] : current) {
    std::string fp = Fingerprint(o);
    auto it = stored.find(key);
    int64_t version = 1;
    if (it != stored.end()) {
      if (!it->second.episode_id.empty() && it->second.fingerprint == fp) {
        ++report->unchanged;
        continue;
      }
      version = it->second.version + 1;
      if (!it->second.episode_id.empty()) {
        changes.retract.emplace_back(it->second.episode_id, "moved or changed");
        ++report->changed;
      } else {
        ++report->added;  // reinstated after a cancellation
      }
    } else {
      ++report->added;
    }
    // An attendee never seen before is named as the calendar names them (CN); a known
    // one keeps their name.
    std::string who = Counterparty(o);
    if (!who.empty() && !o.focus && !o.counterparty_name.empty() && !named.count(who)) {
      named.insert(who);
      bool known = false;
      CORTEX_RETURN_IF_ERROR(store.Read([&](ReadTx& tx) -> Status {
        auto e = tx.entities().FindByIdentifier(ws, who);
        known = e.ok();
        return e.ok() || e.status().code() == Code::kNotFound ? Status::Ok() : e.status();
      }));
      if (!known) {
        changes.items.push_back(IncomingEntity{
            Utf8Prefix(o.counterparty_name, limits::kMaxNameChars), "person", {who}, {}});
      }
    }
    episodes.push_back(CalendarEpisode(o, source, version));
    changes.added.push_back(
        {{key, "", fp, version, o.start, o.end}, *episodes.back().episode.external_id});
  }
  for (const auto& [key, row] : stored) {
    if (current.count(key)) continue;
    if (!row.episode_id.empty() && row.ends_at > now) {
      // A future (or running) occurrence the calendar no longer holds: cancelled, or moved
      // out of the window. What has already happened stays as it was.
      changes.retract.emplace_back(row.episode_id, "cancelled or removed");
      ++report->removed;
      CalendarOccurrenceRow r = row;
      r.episode_id.clear();
      changes.put.push_back(std::move(r));
    } else if (row.starts_at < window_from) {
      changes.drop.push_back(key);  // out of the window behind: forgotten
    }
  }
  for (IncomingEpisode& e : episodes) changes.items.push_back(std::move(e));
  return changes;
}

// The connector's record after the pass, in the transaction that stores its episodes.
Status RecordPass(WriteTx& tx, const std::string& ws, const std::string& source, TimePoint now,
                  const CalendarChanges& changes, const CalendarTexts& read) {
  auto cal = tx.calendar();
  auto episodes = tx.episodes();
  for (const CalendarChanges::Added& a : changes.added) {
    auto e = episodes.FindByExternalId(ws, a.external_id);
    if (!e.ok()) return e.status();
    CalendarOccurrenceRow row = a.row;
    row.episode_id = e->id;
    CORTEX_RETURN_IF_ERROR(cal.PutOccurrence(ws, source, row));
  }
  for (const auto& [episode_id, reason] : changes.retract) {
    CORTEX_RETURN_IF_ERROR(episodes.Retract(ws, episode_id, now, reason));
  }
  for (const CalendarOccurrenceRow& row : changes.put) {
    CORTEX_RETURN_IF_ERROR(cal.PutOccurrence(ws, source, row));
  }
  for (const std::string& key : changes.drop) {
    CORTEX_RETURN_IF_ERROR(cal.DeleteOccurrence(ws, source, key));
  }
  for (const CalendarResource& r : read.fetched) {
    CalendarResourceRow row{r.href, r.etag, r.data};
    CORTEX_RETURN_IF_ERROR(cal.PutResource(ws, source, row));
  }
  for (const std::string& href : read.gone) {
    CORTEX_RETURN_IF_ERROR(cal.DeleteResource(ws, source, href));
  }
  return Status::Ok();
}

}  // namespace

Result<CalendarSyncReport> SyncCalendar(Store& store, const Clock& clock,
                                        const CalendarAccount& account) {
  auto ws = EnsureWorkspace(store, clock, account.workspace);
  if (!ws.ok()) return ws.status();
  const std::string source = "calendar:" + account.Name();
  const std::string name = "calendar " + account.Name();
  const TimePoint now = clock.Now();
  CalendarWindow window;
  window.from = now - std::chrono::hours(24 * account.past_days);
  window.to = now + std::chrono::hours(24 * account.future_days);
  window.focus = account.focus;
  window.self = account.self;
  CalendarSyncReport report;

  auto read = ReadCalendarTexts(store, ws->id, source, account, window);
  if (!read.ok()) return read.status();
  report.fetched = read->fetched.size();
  auto current = ExpandOccurrences(read->texts, window, account, name, &report);
  if (!current.ok()) return current.status();

  std::map<std::string, CalendarOccurrenceRow> stored;
  CORTEX_RETURN_IF_ERROR(store.Read([&](ReadTx& tx) -> Status {
    auto rows = tx.calendar().Occurrences(ws->id, source);
    if (!rows.ok()) return rows.status();
    for (CalendarOccurrenceRow& r : *rows) stored[r.key] = std::move(r);
    return Status::Ok();
  }));

  auto changes =
      DiffOccurrences(store, ws->id, source, *current, stored, now, window.from, &report);
  if (!changes.ok()) return changes.status();
  auto ingested = IngestItems(
      store, clock, ws->id, std::move(changes->items),
      [&](WriteTx& tx) -> Status { return RecordPass(tx, ws->id, source, now, *changes, *read); });
  if (!ingested.ok()) {
    std::string msg = name + ": " + ingested.status().message();
    return ingested.status().code() == Code::kUnavailable ? Status::Unavailable(msg)
                                                          : Status::Internal(msg);
  }
  return report;
}

}  // namespace cortex
