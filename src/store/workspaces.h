// The workspaces area: one row per person's Cortex, with its versions, settings and counts.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "store/model.h"
#include "store/tx.h"

namespace cortex {

class WorkspacesReader {
 public:
  explicit WorkspacesReader(TxState& s) : s_(s) {}
  Result<Workspace> FindByName(const std::string& name);
  Result<Workspace> Get(const std::string& ws);
  // By name.
  Result<std::vector<Workspace>> List();
  Result<WorkspaceSettings> Settings(const std::string& ws);
  // Entities, episodes (this write's included) and active tokens.
  Result<WorldCounts> Counts(const std::string& ws);

 protected:
  TxState& s_;
};

class WorkspacesWriter : public WorkspacesReader {
 public:
  using WorkspacesReader::WorkspacesReader;
  Status Insert(const Workspace& w);
  Status SetWorldVersion(const std::string& ws, const std::string& wv);
  Status SetAgentVersion(const std::string& ws, const std::string& av);
  Status SetSettings(const std::string& ws, const WorkspaceSettings& settings);
  // Holds the workspace's row until commit (PostgreSQL: a row lock; SQLite's write
  // transactions are one at a time already): writers that take it first run one after
  // another, and each reads what the one before it committed.
  Status Lock(const std::string& ws);
};

inline WorkspacesReader ReadTx::workspaces() const { return WorkspacesReader(s_); }
inline WorkspacesWriter WriteTx::workspaces() const { return WorkspacesWriter(s_); }

}  // namespace cortex
