// The `cortex` command line. Every subcommand takes its store: --data DIR (SQLite) or
// --database postgresql://... (also from CORTEX_DATABASE, which keeps a password off the
// command line).
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <optional>

#include <spdlog/spdlog.h>

#include "app.h"
#include "cli/commands.h"
#include "core/log.h"
#include "store/store.h"
#include "tools/cortex_tools.h"

int main(int argc, char** argv) {
  using namespace cortex;
  CLI::App app{"Cortex: a chief-of-staff agent backend, driven over MCP"};
  app.require_subcommand(1);
  app.set_version_flag("--version", CORTEX_VERSION);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

  std::string data_dir;  // the store: a SQLite data directory or a postgresql:// URL
  std::string database_url;
  auto add_data = [&](CLI::App* cmd) {
    auto* dir = cmd->add_option("--data", data_dir, "Data directory (the embedded SQLite store)");
    auto* url = cmd->add_option("--database", database_url,
                                "PostgreSQL URL, postgresql://... (default: $CORTEX_DATABASE)");
    dir->excludes(url);
    // An explicit --data wins over CORTEX_DATABASE, so a shell that exports it can still
    // work on a local SQLite store.
    cmd->parse_complete_callback([&] {
      if (data_dir.empty() && database_url.empty()) {
        if (const char* env = std::getenv("CORTEX_DATABASE")) database_url = env;
      }
      if (!database_url.empty()) {
        if (!IsPostgresUrl(database_url)) {
          throw CLI::ValidationError("--database", "expected a postgresql:// or postgres:// URL");
        }
        data_dir = database_url;
      }
      if (data_dir.empty()) {
        throw CLI::RequiredError("--data DIR or --database URL (or CORTEX_DATABASE)");
      }
    });
  };
  int rc = 0;

  // serve
  ServeOptions serve;
  auto* serve_cmd = app.add_subcommand("serve", "Serve MCP over HTTP until SIGTERM");
  add_data(serve_cmd);
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
  serve_cmd->callback([&] {
    serve.data_dir = data_dir;
    rc = RunServe(serve, RegisterCortexTools);
  });

  // mcp --stdio
  auto* mcp_cmd = app.add_subcommand("mcp", "Serve MCP on stdin/stdout (token in CORTEX_TOKEN)");
  add_data(mcp_cmd);
  bool stdio = false;
  std::string mcp_config;
  mcp_cmd->add_flag("--stdio", stdio, "Use the stdio transport")->required();
  mcp_cmd->add_option("--config", mcp_config, "TOML configuration file")->check(CLI::ExistingFile);
  mcp_cmd->callback([&] {
    const char* token = std::getenv("CORTEX_TOKEN");
    if (token == nullptr || *token == '\0') {
      std::cerr << "cortex mcp --stdio: set CORTEX_TOKEN to a token from "
                   "`cortex token create`\n";
      rc = 2;
      return;
    }
    rc = RunStdio(data_dir, mcp_config, token, RegisterCortexTools);
  });

  // token create|list|revoke|check
  auto* token_cmd = app.add_subcommand("token", "Manage bearer tokens");
  token_cmd->require_subcommand(1);
  std::string workspace, scopes = "read", label, token_id, file;
  auto* create = token_cmd->add_subcommand("create", "Create a token; prints only the token");
  add_data(create);
  create->add_option("--workspace", workspace, "Workspace (created if missing)")->required();
  create
      ->add_option("--scopes", scopes,
                   "Comma-separated: read, act (an agent), approve (a person), admin")
      ->capture_default_str();
  create->add_option("--label", label, "A note to recognise the token by");
  create->callback([&] { rc = CmdTokenCreate(data_dir, workspace, scopes, label); });
  auto* list = token_cmd->add_subcommand("list", "List a workspace's tokens (never secrets)");
  add_data(list);
  list->add_option("--workspace", workspace, "Workspace")->required();
  list->callback([&] { rc = CmdTokenList(data_dir, workspace); });
  auto* revoke = token_cmd->add_subcommand("revoke", "Revoke a token at once");
  add_data(revoke);
  revoke->add_option("--workspace", workspace, "Workspace")->required();
  revoke->add_option("token_id", token_id, "The token's id (tok_...)")->required();
  revoke->callback([&] { rc = CmdTokenRevoke(data_dir, workspace, token_id); });
  auto* check = token_cmd->add_subcommand(
      "check", "Exit 0 if the token in CORTEX_TOKEN is valid for the workspace, 1 if not");
  add_data(check);
  check->add_option("--workspace", workspace, "Workspace")->required();
  check->callback([&] {
    const char* secret = std::getenv("CORTEX_TOKEN");
    rc = CmdTokenCheck(data_dir, workspace, secret == nullptr ? "" : secret);
  });

  // ingest
  auto* ingest = app.add_subcommand("ingest", "Ingest a JSONL file of entities and episodes");
  add_data(ingest);
  ingest->add_option("--workspace", workspace, "Workspace (created if missing)")->required();
  ingest->add_option("file", file, "FILE.jsonl, or - for stdin")->required();
  ingest->callback([&] { rc = CmdIngest(data_dir, workspace, file); });

  // sync
  std::string sync_config;
  auto* sync = app.add_subcommand(
      "sync", "Read new mail and the calendars of every configured connector, once");
  add_data(sync);
  sync->add_option("--config", sync_config,
                   "TOML configuration file with [[connectors.imap]] or [[connectors.calendar]]")
      ->required()
      ->check(CLI::ExistingFile);
  sync->callback([&] { rc = CmdSync(data_dir, sync_config); });

  // inbox link|list|approve|reject
  auto* inbox_cmd = app.add_subcommand("inbox", "The person's approval inbox");
  inbox_cmd->require_subcommand(1);
  std::string base_url = "http://127.0.0.1:8787", decision_id, inbox_text, inbox_config;
  auto* inbox_link = inbox_cmd->add_subcommand(
      "link", "Print a one-time sign-in URL for the web inbox (valid 15 minutes)");
  add_data(inbox_link);
  inbox_link->add_option("--workspace", workspace, "Workspace")->required();
  inbox_link->add_option("--base-url", base_url, "Where `cortex serve` is reached")
      ->capture_default_str();
  inbox_link->callback([&] { rc = CmdInboxLink(data_dir, workspace, base_url); });
  auto* inbox_list = inbox_cmd->add_subcommand("list", "List the actions awaiting approval");
  add_data(inbox_list);
  inbox_list->add_option("--workspace", workspace, "Workspace")->required();
  inbox_list->callback([&] { rc = CmdInboxList(data_dir, workspace); });
  for (bool approve : {true, false}) {
    auto* decide = inbox_cmd->add_subcommand(approve ? "approve" : "reject",
                                             approve ? "Approve a pending action (it is sent)"
                                                     : "Reject a pending action (nothing is sent)");
    add_data(decide);
    decide->add_option("--workspace", workspace, "Workspace")->required();
    decide->add_option("decision_id", decision_id, "The pending action's decision (dec_...)")
        ->required();
    decide->add_option(approve ? "--message" : "--reason", inbox_text,
                       approve ? "Send this text instead of the draft" : "Why, for the record");
    decide->add_option("--config", inbox_config, "The server's TOML config (trust settings)");
    decide->callback([&, approve, decide] {
      std::optional<std::string> text;
      if (decide->count(approve ? "--message" : "--reason") > 0) text = inbox_text;
      rc = CmdInboxDecide(data_dir, workspace, inbox_config, decision_id, approve, text);
    });
  }

  // rules import|list
  auto* rules_cmd = app.add_subcommand(
      "rules", "Import and list a workspace's rules; accept or reject learned ones");
  rules_cmd->require_subcommand(1);
  auto* rules_import = rules_cmd->add_subcommand("import", "Make FILE.yaml the workspace's rules");
  add_data(rules_import);
  rules_import->add_option("--workspace", workspace, "Workspace (created if missing)")->required();
  rules_import->add_option("file", file, "FILE.yaml, or - for stdin")->required();
  rules_import->callback([&] { rc = CmdRulesImport(data_dir, workspace, file); });
  auto* rules_list =
      rules_cmd->add_subcommand("list", "List the rules in force, in evaluation order");
  add_data(rules_list);
  rules_list->add_option("--workspace", workspace, "Workspace")->required();
  bool all_rules = false;
  rules_list->add_flag("--all", all_rules, "Include retired rules");
  rules_list->callback([&] { rc = CmdRulesList(data_dir, workspace, all_rules); });
  std::string rule_id;
  for (bool accept : {true, false}) {
    auto* decide = rules_cmd->add_subcommand(
        accept ? "accept" : "reject",
        accept ? "Accept a learned rule: it becomes active (triage uses it from now on)"
               : "Reject a learned rule: not proposed again unless its evidence doubles");
    add_data(decide);
    decide->add_option("--workspace", workspace, "Workspace")->required();
    decide->add_option("rule_id", rule_id, "The learned rule (rul_...)")->required();
    decide->callback([&, accept] { rc = CmdRulesDecide(data_dir, workspace, rule_id, accept); });
  }

  // learn
  auto* learn = app.add_subcommand(
      "learn", "Run one learning pass: propose rules from the workspace's history");
  add_data(learn);
  learn->add_option("--workspace", workspace, "Workspace")->required();
  learn->callback([&] { rc = CmdLearn(data_dir, workspace); });

  // trust set|list
  auto* trust_cmd = app.add_subcommand("trust", "Set and list autonomy levels");
  trust_cmd->require_subcommand(1);
  std::string scope, action_class = "communicate";
  int level = -1, ceiling = -1;
  auto* trust_set = trust_cmd->add_subcommand(
      "set", "Set the level (and, for a tag, the ceiling) for an action class and a scope");
  add_data(trust_set);
  trust_set->add_option("--workspace", workspace, "Workspace")->required();
  trust_set
      ->add_option("--scope", scope,
                   "default, tag:<tag>, or a counterparty (entity id, email, @handle)")
      ->required();
  trust_set->add_option("--class", action_class, "Action class")->capture_default_str();
  trust_set->add_option("--level", level, "0 off, 1 draft, 2 supervised, 3 autonomous")
      ->check(CLI::Range(0, 3));
  trust_set->add_option("--ceiling", ceiling, "Tags only: the highest level trust may earn")
      ->check(CLI::Range(0, 3));
  trust_set->callback([&] {
    rc = CmdTrustSet(data_dir, workspace, action_class, scope,
                     level >= 0 ? std::optional<int>(level) : std::nullopt,
                     ceiling >= 0 ? std::optional<int>(ceiling) : std::nullopt);
  });
  auto* trust_list = trust_cmd->add_subcommand("list", "List the trust settings");
  add_data(trust_list);
  trust_list->add_option("--workspace", workspace, "Workspace")->required();
  trust_list->callback([&] { rc = CmdTrustList(data_dir, workspace); });

  // quota set|list
  auto* quota_cmd = app.add_subcommand("quota", "Set and list a workspace's quotas");
  quota_cmd->require_subcommand(1);
  std::string quota_name, quota_value, quota_config;
  auto* quota_set = quota_cmd->add_subcommand(
      "set", "Override one quota for a workspace (\"default\" removes the override)");
  add_data(quota_set);
  quota_set->add_option("--workspace", workspace, "Workspace")->required();
  quota_set->add_option("name", quota_name, "e.g. calls_per_minute (see quota list)")->required();
  quota_set->add_option("value", quota_value, "a whole number, or default")->required();
  quota_set->callback([&] { rc = CmdQuotaSet(data_dir, workspace, quota_name, quota_value); });
  auto* quota_list = quota_cmd->add_subcommand("list", "The quotas in force for a workspace");
  add_data(quota_list);
  quota_list->add_option("--workspace", workspace, "Workspace")->required();
  quota_list->add_option("--config", quota_config, "The server's TOML config, for its defaults");
  quota_list->callback([&] { rc = CmdQuotaList(data_dir, workspace, quota_config); });

  // ledger verify
  auto* ledger_cmd = app.add_subcommand("ledger", "The action ledger");
  ledger_cmd->require_subcommand(1);
  auto* verify = ledger_cmd->add_subcommand(
      "verify", "Check every workspace's hash chain (or one with --workspace)");
  add_data(verify);
  std::string verify_ws;
  verify->add_option("--workspace", verify_ws, "Only this workspace");
  verify->callback([&] { rc = CmdLedgerVerify(data_dir, verify_ws); });

  // migrate
  auto* migrate = app.add_subcommand("migrate", "Apply pending schema migrations");
  add_data(migrate);
  migrate->callback([&] { rc = CmdMigrate(data_dir); });

  // demo
  auto* demo = app.add_subcommand("demo", "Create (idempotently) the 'demo' workspace");
  add_data(demo);
  std::string demo_today;
  demo->add_option("--today", demo_today,
                   "Place the demo as if today were this day (YYYY-MM-DD): its last week ends "
                   "on the latest day with that weekday on or before it. Default: today. A "
                   "demo already loaded keeps its days.");
  demo->callback([&] { rc = CmdDemo(data_dir, demo_today); });

  app.parse_complete_callback([&] { InitLogging(log_level); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (!spdlog::get("cortex")) InitLogging(log_level);
    // CLI11's own codes (105 for a missing --config file, 106 for a missing option, ...)
    // are all bad usage here: exit 2, as every subcommand does (cli/commands.h).
    return app.exit(e) == 0 ? 0 : 2;
  }
  return rc;
}
