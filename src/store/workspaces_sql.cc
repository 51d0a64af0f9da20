#include "core/json_text.h"
#include "store/sql_tx.h"
#include "store/workspaces.h"

namespace cortex {

namespace {
constexpr const char* kWorkspaceSelect =
    "SELECT id, name, world_version, agent_version, created_at FROM workspaces";

Workspace WorkspaceRow(const Stmt& s) {
  return Workspace{s.Text(0), s.Text(1), s.Text(2), s.Text(3), s.Time(4)};
}
}  // namespace

Status TxState::FinishWrite() {
  for (const auto& [ws, n] : uncounted) {
    Stmt s = conn.Prepare(
        "UPDATE workspaces SET entity_count = entity_count + ?,"
        " episode_count = episode_count + ? WHERE id = ?");
    CORTEX_RETURN_IF_ERROR(s.Bind(1, n.entities).Bind(2, n.episodes).Bind(3, ws).Run());
  }
  uncounted.clear();
  return Status::Ok();
}

Result<Workspace> WorkspacesReader::FindByName(const std::string& name) {
  Stmt s = s_.conn.Prepare(kWorkspaceSelect + std::string(" WHERE name = ?"));
  s.Bind(1, name);
  return OneRow(s, "no workspace '" + name + "'", WorkspaceRow);
}

Result<Workspace> WorkspacesReader::Get(const std::string& ws) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  return s_.Remembered(&StableRows::workspaces, ws, [&]() -> Result<Workspace> {
    static const std::string sql = kWorkspaceSelect + std::string(" WHERE id = ?");
    Stmt s = s_.conn.Prepare(sql);
    s.Bind(1, ws);
    return OneRow(s, "no workspace " + ws, WorkspaceRow);
  });
}

Result<std::vector<Workspace>> WorkspacesReader::List() {
  Stmt s = s_.conn.Prepare(kWorkspaceSelect + std::string(" ORDER BY name"));
  return AllRows(s, WorkspaceRow);
}

Result<WorkspaceSettings> WorkspacesReader::Settings(const std::string& ws) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  return s_.Remembered(&StableRows::settings, ws, [&]() -> Result<WorkspaceSettings> {
    Stmt s = s_.conn.Prepare("SELECT settings FROM workspaces WHERE id = ?");
    s.Bind(1, ws);
    return OneRow(s, "no workspace " + ws,
                  [](const Stmt& r) { return SettingsFromJson(ParseJson(r.Text(0))); });
  });
}

Result<WorldCounts> WorkspacesReader::Counts(const std::string& ws) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  // Entities and episodes are counted as they are inserted: counting rows here takes time
  // in proportion to the world.
  Stmt s = s_.conn.Prepare(
      "SELECT entity_count, episode_count,"
      " (SELECT count(*) FROM tokens WHERE workspace_id = ?1 AND revoked_at IS NULL)"
      " FROM workspaces WHERE id = ?1");
  s.Bind(1, ws);
  auto counts = OneRow(s, "no workspace " + ws, [](const Stmt& r) {
    return WorldCounts{r.Int(0), r.Int(1), r.Int(2)};
  });
  if (!counts.ok()) return counts;
  if (auto it = s_.uncounted.find(ws); it != s_.uncounted.end()) {
    counts->entities += it->second.entities;
    counts->episodes += it->second.episodes;
  }
  return counts;
}

Status WorkspacesWriter::Insert(const Workspace& w) {
  Stmt s = s_.conn.Prepare(
      "INSERT INTO workspaces (id, name, world_version, agent_version, created_at) "
      "VALUES (?, ?, ?, ?, ?)");
  return s.Bind(1, w.id)
      .Bind(2, w.name)
      .Bind(3, w.world_version)
      .Bind(4, w.agent_version)
      .Bind(5, w.created_at)
      .Run();
}

Status WorkspacesWriter::SetWorldVersion(const std::string& ws, const std::string& wv) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare("UPDATE workspaces SET world_version = ? WHERE id = ?");
  return s.Bind(1, wv).Bind(2, ws).Run();
}

Status WorkspacesWriter::SetAgentVersion(const std::string& ws, const std::string& av) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare("UPDATE workspaces SET agent_version = ? WHERE id = ?");
  return s.Bind(1, av).Bind(2, ws).Run();
}

Status WorkspacesWriter::Lock(const std::string& ws) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare("UPDATE workspaces SET agent_version = agent_version WHERE id = ?");
  return s.Bind(1, ws).Run();
}

Status WorkspacesWriter::SetSettings(const std::string& ws, const WorkspaceSettings& settings) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  std::string text = DumpJson(SettingsToJson(settings));
  Stmt s = s_.conn.Prepare("UPDATE workspaces SET settings = ? WHERE id = ?");
  return s.Bind(1, text).Bind(2, ws).Run();
}

}  // namespace cortex
