#include <algorithm>
#include <cctype>

#include "store/entities.h"
#include "store/sql_tx.h"

namespace cortex {

Result<Entity> EntitiesReader::Get(const std::string& ws, const std::string& entity_id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT id, workspace_id, kind, name, created_at FROM entities "
      "WHERE workspace_id = ? AND id = ?");
  s.Bind(1, ws).Bind(2, entity_id);
  auto e = OneRow(s, "no entity " + entity_id, [](const Stmt& r) {
    return Entity{r.Text(0), r.Text(1), r.Text(2), r.Text(3), {}, {}, r.Time(4)};
  });
  if (e.ok()) CORTEX_RETURN_IF_ERROR(LoadDetails(&*e));
  return e;
}

Result<Entity> EntitiesReader::FindByIdentifier(const std::string& ws,
                                                const std::string& identifier) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT entity_id FROM entity_identifiers WHERE workspace_id = ? AND identifier = ?");
  s.Bind(1, ws).Bind(2, identifier);
  auto id = OneRow(s, "no entity with identifier '" + identifier + "'",
                   [](const Stmt& r) { return r.Text(0); });
  if (!id.ok()) return id.status();
  return Get(ws, *id);
}

Result<std::vector<Entity>> EntitiesReader::List(const std::string& ws, int limit) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  std::vector<Entity> out;
  {
    Stmt s = s_.conn.Prepare(
        "SELECT id, workspace_id, kind, name, created_at FROM entities WHERE workspace_id = ?"
        " ORDER BY id LIMIT ?");
    s.Bind(1, ws).Bind(2, static_cast<int64_t>(limit));
    auto rows = AllRows(s, [](const Stmt& r) {
      return Entity{r.Text(0), r.Text(1), r.Text(2), r.Text(3), {}, {}, r.Time(4)};
    });
    if (!rows.ok()) return rows.status();
    out = std::move(*rows);
  }
  for (Entity& e : out) CORTEX_RETURN_IF_ERROR(LoadDetails(&e));
  return out;
}

namespace {

// ASCII lower case, whitespace runs as one space, trimmed.
std::string FoldName(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isspace(c)) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += static_cast<char>(std::tolower(c));
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

Result<std::vector<Entity>> EntitiesReader::FindByName(const std::string& ws,
                                                       const std::string& query, int limit) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  const std::string q = FoldName(query);
  std::vector<Entity> exact, partial;
  if (q.empty()) return exact;
  {
    Stmt s = s_.conn.Prepare(
        "SELECT id, workspace_id, kind, name, created_at FROM entities WHERE workspace_id = ?");
    s.Bind(1, ws);
    Status st;
    while (s.Step(&st)) {
      std::string name = FoldName(s.Text(3));
      bool whole = name == q, word = false;
      for (size_t at = 0; !whole && !word && at < name.size();) {
        word = name.compare(at, q.size(), q) == 0;
        size_t space = name.find(' ', at);
        at = space == std::string::npos ? name.size() : space + 1;
      }
      if (whole || word) {
        (whole ? exact : partial)
            .push_back(Entity{s.Text(0), s.Text(1), s.Text(2), s.Text(3), {}, {}, s.Time(4)});
      }
    }
    CORTEX_RETURN_IF_ERROR(st);
  }
  auto by_name = [](const Entity& a, const Entity& b) {
    return a.name != b.name ? a.name < b.name : a.id < b.id;
  };
  std::sort(exact.begin(), exact.end(), by_name);
  std::sort(partial.begin(), partial.end(), by_name);
  for (Entity& e : partial) exact.push_back(std::move(e));
  if (exact.size() > static_cast<size_t>(std::max(limit, 0))) exact.resize(std::max(limit, 0));
  for (Entity& e : exact) CORTEX_RETURN_IF_ERROR(LoadDetails(&e));
  return exact;
}

Status EntitiesReader::LoadDetails(Entity* e) {
  // Sorted here: the index on entity_id orders identifiers only within a workspace, which
  // this look-up does not name, so an ORDER BY would sort them in a temporary b-tree.
  Stmt ids = s_.conn.Prepare("SELECT identifier FROM entity_identifiers WHERE entity_id = ?");
  ids.Bind(1, e->id);
  Status st;
  while (ids.Step(&st)) e->identifiers.push_back(ids.Text(0));
  CORTEX_RETURN_IF_ERROR(st);
  std::sort(e->identifiers.begin(), e->identifiers.end());
  Stmt tags = s_.conn.Prepare("SELECT tag FROM entity_tags WHERE entity_id = ? ORDER BY tag");
  tags.Bind(1, e->id);
  while (tags.Step(&st)) e->tags.push_back(tags.Text(0));
  return st;
}

Status EntitiesWriter::Insert(const Entity& e) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(e.workspace_id));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO entities (id, workspace_id, kind, name, created_at) VALUES (?, ?, ?, ?, ?)");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, e.id)
                             .Bind(2, e.workspace_id)
                             .Bind(3, e.kind)
                             .Bind(4, e.name)
                             .Bind(5, e.created_at)
                             .Run());
  ++s_.uncounted[e.workspace_id].entities;
  for (const std::string& ident : e.identifiers) {
    CORTEX_RETURN_IF_ERROR(AddIdentifier(e.workspace_id, e.id, ident));
  }
  for (const std::string& tag : e.tags) CORTEX_RETURN_IF_ERROR(AddTag(e.workspace_id, e.id, tag));
  return Status::Ok();
}

Status EntitiesWriter::AddIdentifier(const std::string& ws, const std::string& entity_id,
                                     const std::string& identifier) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO entity_identifiers (workspace_id, identifier, entity_id) VALUES (?, ?, ?)");
  return s.Bind(1, ws).Bind(2, identifier).Bind(3, entity_id).Run();
}

Status EntitiesWriter::AddTag(const std::string& ws, const std::string& entity_id,
                              const std::string& tag) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  // The workspace check keeps a caller from tagging another workspace's entity.
  Stmt s = s_.conn.Prepare(
      "INSERT INTO entity_tags (entity_id, tag) "
      "SELECT id, CAST(? AS TEXT) FROM entities WHERE workspace_id = ? AND id = ?"
      " ON CONFLICT DO NOTHING");
  return s.Bind(1, tag).Bind(2, ws).Bind(3, entity_id).Run();
}

Status EntitiesWriter::SetName(const std::string& ws, const std::string& entity_id,
                               const std::string& name) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare("UPDATE entities SET name = ? WHERE workspace_id = ? AND id = ?");
  return s.Bind(1, name).Bind(2, ws).Bind(3, entity_id).Run();
}

}  // namespace cortex
