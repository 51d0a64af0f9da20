// The administrative subcommands. Each returns the process exit code: 0 success,
// 1 failure, 2 bad usage. Results go to stdout, diagnostics to stderr.
#pragma once

#include <optional>
#include <string>

namespace cortex {

int CmdTokenCreate(const std::string& data, const std::string& workspace, const std::string& scopes,
                   const std::string& label);
int CmdTokenList(const std::string& data, const std::string& workspace);
// Exit 0 if `secret` (CORTEX_TOKEN) authenticates for `workspace`, 1 if not; prints no secret.
int CmdTokenCheck(const std::string& data, const std::string& workspace, const std::string& secret);
int CmdTokenRevoke(const std::string& data, const std::string& workspace,
                   const std::string& token_id);
int CmdIngest(const std::string& data, const std::string& workspace, const std::string& file);
// One pass of every [[connectors.*]] account of `config_path`: a line per account, 1 if any
// failed (its error on stderr, naming it).
int CmdSync(const std::string& data, const std::string& config_path);
int CmdRulesImport(const std::string& data, const std::string& workspace, const std::string& file);
int CmdRulesList(const std::string& data, const std::string& workspace, bool all);
// accept (true) or reject a learned rule.
int CmdRulesDecide(const std::string& data, const std::string& workspace,
                   const std::string& rule_id, bool accept);
// One learning pass (docs/learning.md); prints one line.
int CmdLearn(const std::string& data, const std::string& workspace);
int CmdTrustSet(const std::string& data, const std::string& workspace, const std::string& cls,
                const std::string& scope, std::optional<int> level, std::optional<int> ceiling);
int CmdTrustList(const std::string& data, const std::string& workspace);
// `value` is a number, or "default" to drop the workspace's override.
int CmdQuotaSet(const std::string& data, const std::string& workspace, const std::string& name,
                const std::string& value);
// The effective limits: the config's defaults (`config`, may be empty) and the overrides.
int CmdQuotaList(const std::string& data, const std::string& workspace, const std::string& config);
int CmdLedgerVerify(const std::string& data, const std::string& workspace);
int CmdMigrate(const std::string& data);
// `today` (YYYY-MM-DD, empty: the clock's) is the day the demo is placed against.
int CmdDemo(const std::string& data, const std::string& today);
// inbox link|list|approve|reject: the person's own channel, in a terminal.
int CmdInboxLink(const std::string& data, const std::string& workspace,
                 const std::string& base_url);
int CmdInboxList(const std::string& data, const std::string& workspace);
int CmdInboxDecide(const std::string& data, const std::string& workspace, const std::string& config,
                   const std::string& decision_id, bool approve,
                   const std::optional<std::string>& text);

}  // namespace cortex
