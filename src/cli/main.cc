// The `cortex` command line. Every subcommand takes its store: --data DIR (SQLite) or
// --database postgresql://... (also from CORTEX_DATABASE, which keeps a password off the
// command line).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "app.h"
#include "cli/commands.h"
#include "core/log.h"
#include "store/store.h"
#include "tools/cortex_tools.h"

namespace cortex {
namespace {

// What the command line is parsed into. The callback of the one sub-command given runs
// after the parse, reads these and sets `rc`.
struct CommandLine {
  std::string log_level = "info";
  std::string data_dir;  // the store: a SQLite data directory or a postgresql:// URL
  std::string database_url;
  std::string workspace, file;  // shared by many sub-commands
  int rc = 0;
  // serve, mcp
  ServeOptions serve;
  bool stdio = false;
  std::string mcp_config;
  // token
  std::string scopes = "read", label, token_id;
  // sync
  std::string sync_config;
  // inbox
  std::string base_url = "http://127.0.0.1:8787", decision_id, inbox_text, inbox_config;
  // rules
  bool all_rules = false;
  std::string rule_id;
  // trust
  std::string scope, action_class = "communicate";
  int level = -1, ceiling = -1;
  // quota
  std::string quota_name, quota_value, quota_config;
  // ledger, demo
  std::string verify_ws, demo_today;
};

// --data DIR or --database URL, on a sub-command.
void AddDataOptions(CLI::App* cmd, CommandLine& cl) {
  auto* dir = cmd->add_option("--data", cl.data_dir, "Data directory (the embedded SQLite store)");
  auto* url = cmd->add_option("--database", cl.database_url,
                              "PostgreSQL URL, postgresql://... (default: $CORTEX_DATABASE)");
  dir->excludes(url);
  // An explicit --data wins over CORTEX_DATABASE, so a shell that exports it can still
  // work on a local SQLite store.
  cmd->parse_complete_callback([&cl] {
    if (cl.data_dir.empty() && cl.database_url.empty()) {
      if (const char* env = std::getenv("CORTEX_DATABASE")) cl.database_url = env;
    }
    if (!cl.database_url.empty()) {
      if (!IsPostgresUrl(cl.database_url)) {
        throw CLI::ValidationError("--database", "expected a postgresql:// or postgres:// URL");
      }
      cl.data_dir = cl.database_url;
    }
    if (cl.data_dir.empty()) {
      throw CLI::RequiredError("--data DIR or --database URL (or CORTEX_DATABASE)");
    }
  });
}

// serve, mcp --stdio
void AddServeCommands(CLI::App& app, CommandLine& cl) {
  ServeOptions& serve = cl.serve;
  auto* serve_cmd = app.add_subcommand("serve", "Serve MCP over HTTP until SIGTERM");
  AddDataOptions(serve_cmd, cl);
  serve_cmd->add_option("--config", serve.config_path, "TOML configuration file")
      ->check(CLI::ExistingFile);
  serve_cmd->add_option("--listen", serve.listen, "HOST:PORT to listen on")->capture_default_str();
  serve_cmd->add_flag("--insecure-no-auth", serve.insecure_no_auth,
                      "Accept requests without a token (loopback only; for test suites)");
  serve_cmd
      ->add_option("--workspace", serve.anonymous_workspace,
                   "With --insecure-no-auth: the workspace requests act as")
      ->capture_default_str();
  serve_cmd->add_option("--allow-origin", serve.allowed_origins,
                        "An Origin allowed besides loopback ones (repeatable)");
  serve_cmd->add_option("--allow-host", serve.allowed_hosts,
                        "A Host name allowed besides loopback ones (repeatable)");
  serve_cmd->add_option("--base-url", serve.base_url,
                        "http(s)://host[:port] clients reach this server at (behind a proxy): "
                        "the OAuth issuer and resource URLs ([http] public_url)");
  serve_cmd->add_option("--threads", serve.threads, "I/O threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  serve_cmd->callback([&cl] {
    cl.serve.data_dir = cl.data_dir;
    cl.rc = RunServe(cl.serve, RegisterCortexTools);
  });

  auto* mcp_cmd = app.add_subcommand("mcp", "Serve MCP on stdin/stdout (token in CORTEX_TOKEN)");
  AddDataOptions(mcp_cmd, cl);
  mcp_cmd->add_flag("--stdio", cl.stdio, "Use the stdio transport")->required();
  mcp_cmd->add_option("--config", cl.mcp_config, "TOML configuration file")
      ->check(CLI::ExistingFile);
  mcp_cmd->callback([&cl] {
    const char* token = std::getenv("CORTEX_TOKEN");
    if (token == nullptr || *token == '\0') {
      std::cerr << "cortex mcp --stdio: set CORTEX_TOKEN to a token from "
                   "`cortex token create`\n";
      cl.rc = 2;
      return;
    }
    cl.rc = RunStdio(cl.data_dir, cl.mcp_config, token, RegisterCortexTools);
  });
}

// token create|list|revoke|check
void AddTokenCommands(CLI::App& app, CommandLine& cl) {
  auto* token_cmd = app.add_subcommand("token", "Manage bearer tokens");
  token_cmd->require_subcommand(1);
  auto* create = token_cmd->add_subcommand("create", "Create a token; prints only the token");
  AddDataOptions(create, cl);
  create->add_option("--workspace", cl.workspace, "Workspace (created if missing)")->required();
  create
      ->add_option("--scopes", cl.scopes,
                   "Comma-separated: read, act (an agent), approve (a person), admin")
      ->capture_default_str();
  create->add_option("--label", cl.label, "A note to recognise the token by");
  create->callback(
      [&cl] { cl.rc = CmdTokenCreate(cl.data_dir, cl.workspace, cl.scopes, cl.label); });
  auto* list = token_cmd->add_subcommand("list", "List a workspace's tokens (never secrets)");
  AddDataOptions(list, cl);
  list->add_option("--workspace", cl.workspace, "Workspace")->required();
  list->callback([&cl] { cl.rc = CmdTokenList(cl.data_dir, cl.workspace); });
  auto* revoke = token_cmd->add_subcommand("revoke", "Revoke a token at once");
  AddDataOptions(revoke, cl);
  revoke->add_option("--workspace", cl.workspace, "Workspace")->required();
  revoke->add_option("token_id", cl.token_id, "The token's id (tok_...)")->required();
  revoke->callback([&cl] { cl.rc = CmdTokenRevoke(cl.data_dir, cl.workspace, cl.token_id); });
  auto* check = token_cmd->add_subcommand(
      "check", "Exit 0 if the token in CORTEX_TOKEN is valid for the workspace, 1 if not");
  AddDataOptions(check, cl);
  check->add_option("--workspace", cl.workspace, "Workspace")->required();
  check->callback([&cl] {
    const char* secret = std::getenv("CORTEX_TOKEN");
    cl.rc = CmdTokenCheck(cl.data_dir, cl.workspace, secret == nullptr ? "" : secret);
  });
}

// ingest, sync
void AddIngestCommands(CLI::App& app, CommandLine& cl) {
  auto* ingest = app.add_subcommand("ingest", "Ingest a JSONL file of entities and episodes");
  AddDataOptions(ingest, cl);
  ingest->add_option("--workspace", cl.workspace, "Workspace (created if missing)")->required();
  ingest->add_option("file", cl.file, "FILE.jsonl, or - for stdin")->required();
  ingest->callback([&cl] { cl.rc = CmdIngest(cl.data_dir, cl.workspace, cl.file); });

  auto* sync = app.add_subcommand(
      "sync", "Read new mail and the calendars of every configured connector, once");
  AddDataOptions(sync, cl);
  sync->add_option("--config", cl.sync_config,
                   "TOML configuration file with [[connectors.imap]] or [[connectors.calendar]]")
      ->required()
      ->check(CLI::ExistingFile);
  sync->callback([&cl] { cl.rc = CmdSync(cl.data_dir, cl.sync_config); });
}

// inbox link|list|approve|reject
void AddInboxCommands(CLI::App& app, CommandLine& cl) {
  auto* inbox_cmd = app.add_subcommand("inbox", "The person's approval inbox");
  inbox_cmd->require_subcommand(1);
  auto* inbox_link = inbox_cmd->add_subcommand(
      "link", "Print a one-time sign-in URL for the web inbox (valid 15 minutes)");
  AddDataOptions(inbox_link, cl);
  inbox_link->add_option("--workspace", cl.workspace, "Workspace")->required();
  inbox_link->add_option("--base-url", cl.base_url, "Where `cortex serve` is reached")
      ->capture_default_str();
  inbox_link->callback([&cl] { cl.rc = CmdInboxLink(cl.data_dir, cl.workspace, cl.base_url); });
  auto* inbox_list = inbox_cmd->add_subcommand("list", "List the actions awaiting approval");
  AddDataOptions(inbox_list, cl);
  inbox_list->add_option("--workspace", cl.workspace, "Workspace")->required();
  inbox_list->callback([&cl] { cl.rc = CmdInboxList(cl.data_dir, cl.workspace); });
  for (bool approve : {true, false}) {
    auto* decide = inbox_cmd->add_subcommand(approve ? "approve" : "reject",
                                             approve ? "Approve a pending action (it is sent)"
                                                     : "Reject a pending action (nothing is sent)");
    AddDataOptions(decide, cl);
    decide->add_option("--workspace", cl.workspace, "Workspace")->required();
    decide->add_option("decision_id", cl.decision_id, "The pending action's decision (dec_...)")
        ->required();
    decide->add_option(approve ? "--message" : "--reason", cl.inbox_text,
                       approve ? "Send this text instead of the draft" : "Why, for the record");
    decide->add_option("--config", cl.inbox_config, "The server's TOML config (trust settings)");
    decide->callback([&cl, approve, decide] {
      std::optional<std::string> text;
      if (decide->count(approve ? "--message" : "--reason") > 0) text = cl.inbox_text;
      cl.rc =
          CmdInboxDecide(cl.data_dir, cl.workspace, cl.inbox_config, cl.decision_id, approve, text);
    });
  }
}

// rules import|list|accept|reject, learn
void AddRulesCommands(CLI::App& app, CommandLine& cl) {
  auto* rules_cmd = app.add_subcommand(
      "rules", "Import and list a workspace's rules; accept or reject learned ones");
  rules_cmd->require_subcommand(1);
  auto* rules_import = rules_cmd->add_subcommand("import", "Make FILE.yaml the workspace's rules");
  AddDataOptions(rules_import, cl);
  rules_import->add_option("--workspace", cl.workspace, "Workspace (created if missing)")
      ->required();
  rules_import->add_option("file", cl.file, "FILE.yaml, or - for stdin")->required();
  rules_import->callback([&cl] { cl.rc = CmdRulesImport(cl.data_dir, cl.workspace, cl.file); });
  auto* rules_list =
      rules_cmd->add_subcommand("list", "List the rules in force, in evaluation order");
  AddDataOptions(rules_list, cl);
  rules_list->add_option("--workspace", cl.workspace, "Workspace")->required();
  rules_list->add_flag("--all", cl.all_rules, "Include retired rules");
  rules_list->callback([&cl] { cl.rc = CmdRulesList(cl.data_dir, cl.workspace, cl.all_rules); });
  for (bool accept : {true, false}) {
    auto* decide = rules_cmd->add_subcommand(
        accept ? "accept" : "reject",
        accept ? "Accept a learned rule: it becomes active (triage uses it from now on)"
               : "Reject a learned rule: not proposed again unless its evidence doubles");
    AddDataOptions(decide, cl);
    decide->add_option("--workspace", cl.workspace, "Workspace")->required();
    decide->add_option("rule_id", cl.rule_id, "The learned rule (rul_...)")->required();
    decide->callback(
        [&cl, accept] { cl.rc = CmdRulesDecide(cl.data_dir, cl.workspace, cl.rule_id, accept); });
  }

  auto* learn = app.add_subcommand(
      "learn", "Run one learning pass: propose rules from the workspace's history");
  AddDataOptions(learn, cl);
  learn->add_option("--workspace", cl.workspace, "Workspace")->required();
  learn->callback([&cl] { cl.rc = CmdLearn(cl.data_dir, cl.workspace); });
}

// trust set|list, quota set|list
void AddTrustAndQuotaCommands(CLI::App& app, CommandLine& cl) {
  auto* trust_cmd = app.add_subcommand("trust", "Set and list autonomy levels");
  trust_cmd->require_subcommand(1);
  auto* trust_set = trust_cmd->add_subcommand(
      "set", "Set the level (and, for a tag, the ceiling) for an action class and a scope");
  AddDataOptions(trust_set, cl);
  trust_set->add_option("--workspace", cl.workspace, "Workspace")->required();
  trust_set
      ->add_option("--scope", cl.scope,
                   "default, tag:<tag>, or a counterparty (entity id, email, @handle)")
      ->required();
  trust_set->add_option("--class", cl.action_class, "Action class")->capture_default_str();
  trust_set->add_option("--level", cl.level, "0 off, 1 draft, 2 supervised, 3 autonomous")
      ->check(CLI::Range(0, 3));
  trust_set->add_option("--ceiling", cl.ceiling, "Tags only: the highest level trust may earn")
      ->check(CLI::Range(0, 3));
  trust_set->callback([&cl] {
    cl.rc = CmdTrustSet(cl.data_dir, cl.workspace, cl.action_class, cl.scope,
                        cl.level >= 0 ? std::optional<int>(cl.level) : std::nullopt,
                        cl.ceiling >= 0 ? std::optional<int>(cl.ceiling) : std::nullopt);
  });
  auto* trust_list = trust_cmd->add_subcommand("list", "List the trust settings");
  AddDataOptions(trust_list, cl);
  trust_list->add_option("--workspace", cl.workspace, "Workspace")->required();
  trust_list->callback([&cl] { cl.rc = CmdTrustList(cl.data_dir, cl.workspace); });

  auto* quota_cmd = app.add_subcommand("quota", "Set and list a workspace's quotas");
  quota_cmd->require_subcommand(1);
  auto* quota_set = quota_cmd->add_subcommand(
      "set", "Override one quota for a workspace (\"default\" removes the override)");
  AddDataOptions(quota_set, cl);
  quota_set->add_option("--workspace", cl.workspace, "Workspace")->required();
  quota_set->add_option("name", cl.quota_name, "e.g. calls_per_minute (see quota list)")
      ->required();
  quota_set->add_option("value", cl.quota_value, "a whole number, or default")->required();
  quota_set->callback(
      [&cl] { cl.rc = CmdQuotaSet(cl.data_dir, cl.workspace, cl.quota_name, cl.quota_value); });
  auto* quota_list = quota_cmd->add_subcommand("list", "The quotas in force for a workspace");
  AddDataOptions(quota_list, cl);
  quota_list->add_option("--workspace", cl.workspace, "Workspace")->required();
  quota_list->add_option("--config", cl.quota_config, "The server's TOML config, for its defaults");
  quota_list->callback([&cl] { cl.rc = CmdQuotaList(cl.data_dir, cl.workspace, cl.quota_config); });
}

// ledger verify, migrate, demo
void AddStoreCommands(CLI::App& app, CommandLine& cl) {
  auto* ledger_cmd = app.add_subcommand("ledger", "The action ledger");
  ledger_cmd->require_subcommand(1);
  auto* verify = ledger_cmd->add_subcommand(
      "verify", "Check every workspace's hash chain (or one with --workspace)");
  AddDataOptions(verify, cl);
  verify->add_option("--workspace", cl.verify_ws, "Only this workspace");
  verify->callback([&cl] { cl.rc = CmdLedgerVerify(cl.data_dir, cl.verify_ws); });

  auto* migrate = app.add_subcommand("migrate", "Apply pending schema migrations");
  AddDataOptions(migrate, cl);
  migrate->callback([&cl] { cl.rc = CmdMigrate(cl.data_dir); });

  auto* demo = app.add_subcommand("demo", "Create (idempotently) the 'demo' workspace");
  AddDataOptions(demo, cl);
  demo->add_option("--today", cl.demo_today,
                   "Place the demo as if today were this day (YYYY-MM-DD): its last week ends "
                   "on the latest day with that weekday on or before it. Default: today. A "
                   "demo already loaded keeps its days.");
  demo->callback([&cl] { cl.rc = CmdDemo(cl.data_dir, cl.demo_today); });
}

}  // namespace
}  // namespace cortex

int main(int argc, char** argv) {
  using namespace cortex;
  CLI::App app{"Cortex: a chief-of-staff agent backend, driven over MCP"};
  app.require_subcommand(1);
  app.set_version_flag("--version", CORTEX_VERSION);
  CommandLine cl;
  app.add_option("--log-level", cl.log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  AddServeCommands(app, cl);
  AddTokenCommands(app, cl);
  AddIngestCommands(app, cl);
  AddInboxCommands(app, cl);
  AddRulesCommands(app, cl);
  AddTrustAndQuotaCommands(app, cl);
  AddStoreCommands(app, cl);

  app.parse_complete_callback([&] { InitLogging(cl.log_level); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (!spdlog::get("cortex")) InitLogging(cl.log_level);
    // CLI11's own codes (105 for a missing --config file, 106 for a missing option, ...)
    // are all bad usage here: exit 2, as every subcommand does (cli/commands.h).
    return app.exit(e) == 0 ? 0 : 2;
  }
  return cl.rc;
}
