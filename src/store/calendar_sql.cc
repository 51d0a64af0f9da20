#include "store/calendar.h"
#include "store/sql_tx.h"

namespace cortex {

Result<std::vector<CalendarOccurrenceRow>> CalendarReader::Occurrences(const std::string& ws,
                                                                       const std::string& source) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT occurrence_key, episode_id, fingerprint, version, starts_at, ends_at"
      " FROM calendar_occurrences WHERE workspace_id = ? AND source = ?");
  s.Bind(1, ws).Bind(2, source);
  return AllRows(s, [](const Stmt& s) {
    return CalendarOccurrenceRow{s.Text(0), s.Text(1), s.Text(2), s.Int(3), s.Time(4), s.Time(5)};
  });
}

Result<std::vector<CalendarResourceRow>> CalendarReader::Resources(const std::string& ws,
                                                                   const std::string& source) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT href, etag, data FROM calendar_resources WHERE workspace_id = ? AND source = ?");
  s.Bind(1, ws).Bind(2, source);
  return AllRows(s, [](const Stmt& s) {
    return CalendarResourceRow{s.Text(0), s.Text(1), s.Text(2)};
  });
}

Status CalendarWriter::PutOccurrence(const std::string& ws, const std::string& source,
                                     const CalendarOccurrenceRow& row) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO calendar_occurrences (workspace_id, source, occurrence_key, episode_id,"
      " fingerprint, version, starts_at, ends_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
      " ON CONFLICT (workspace_id, source, occurrence_key) DO UPDATE SET"
      " episode_id = excluded.episode_id, fingerprint = excluded.fingerprint,"
      " version = excluded.version, starts_at = excluded.starts_at, ends_at = excluded.ends_at");
  return s.Bind(1, ws)
      .Bind(2, source)
      .Bind(3, row.key)
      .Bind(4, row.episode_id)
      .Bind(5, row.fingerprint)
      .Bind(6, row.version)
      .Bind(7, row.starts_at)
      .Bind(8, row.ends_at)
      .Run();
}

Status CalendarWriter::DeleteOccurrence(const std::string& ws, const std::string& source,
                                        const std::string& key) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "DELETE FROM calendar_occurrences WHERE workspace_id = ? AND source = ?"
      " AND occurrence_key = ?");
  return s.Bind(1, ws).Bind(2, source).Bind(3, key).Run();
}

Status CalendarWriter::PutResource(const std::string& ws, const std::string& source,
                                   const CalendarResourceRow& row) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO calendar_resources (workspace_id, source, href, etag, data)"
      " VALUES (?, ?, ?, ?, ?) ON CONFLICT (workspace_id, source, href) DO UPDATE SET"
      " etag = excluded.etag, data = excluded.data");
  return s.Bind(1, ws).Bind(2, source).Bind(3, row.href).Bind(4, row.etag).Bind(5, row.data).Run();
}

Status CalendarWriter::DeleteResource(const std::string& ws, const std::string& source,
                                      const std::string& href) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "DELETE FROM calendar_resources WHERE workspace_id = ? AND source = ? AND href = ?");
  return s.Bind(1, ws).Bind(2, source).Bind(3, href).Run();
}

}  // namespace cortex
