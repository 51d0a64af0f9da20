#include "cli/commands.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>

#include "config_file.h"
#include "core/clock.h"
#include "core/ids.h"
#include "core/time.h"
#include "engines/actions/actions.h"
#include "engines/actions/ledger.h"
#include "engines/actions/trust.h"
#include "engines/auth/quotas.h"
#include "engines/auth/signin.h"
#include "engines/auth/tokens.h"
#include "engines/learning/learning.h"
#include "engines/sync/incoming.h"
#include "engines/triage/rules.h"
#include "engines/world/demo_world.h"
#include "engines/world/ingest.h"
#include "store/actions.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/episodes.h"
#include "store/quotas.h"
#include "store/rules.h"
#include "store/store.h"
#include "store/tokens.h"
#include "store/trust.h"
#include "store/workspaces.h"

namespace cortex {
namespace {

int Fail(const Status& st) {
  std::cerr << "error: " << st.message() << "\n";
  return st.code() == Code::kInvalidArgument ? 2 : 1;
}

// Commands that add to the store (token create, ingest, sync, demo, ...) create a missing
// data directory; the others refuse one (a typo in --data), creating nothing.
Result<std::unique_ptr<Store>> Open(const std::string& data) { return OpenStore(data); }
Result<std::unique_ptr<Store>> OpenExisting(const std::string& data) {
  return OpenExistingStore(data);
}

Result<std::string> ReadInput(const std::string& file) {
  std::string body;
  if (file == "-") {
    body.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return body;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::InvalidArgument("cannot read " + file);
  body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return body;
}

void PrintRulesReport(const ImportReport& r) {
  std::cout << "rules: " << r.added << " added, " << r.unchanged << " unchanged, " << r.retired
            << " retired" << (r.settings_changed ? ", settings changed" : "") << "; agent_version "
            << r.agent_version << "\n";
}

void PrintReport(const IngestReport& r) {
  std::cout << "ingested " << r.episodes_added << " episodes, " << r.entities_added
            << " new entities, " << r.entities_updated << " updated entities, " << r.duplicates
            << " duplicates skipped, " << r.triaged << " triaged; world_version " << r.world_version
            << "\n";
}

}  // namespace

int CmdTokenCreate(const std::string& data, const std::string& workspace, const std::string& scopes,
                   const std::string& label) {
  auto parsed = ParseScopes(scopes);
  if (!parsed.ok()) return Fail(parsed.status());
  auto store = Open(data);
  if (!store.ok()) return Fail(store.status());
  auto token = CreateToken(**store, ProcessClock(), workspace, *parsed, label);
  if (!token.ok()) return Fail(token.status());
  std::cout << token->secret << "\n";  // the only time the secret is shown
  return 0;
}

int CmdTokenList(const std::string& data, const std::string& workspace) {
  auto store = OpenExisting(data);
  if (!store.ok()) return Fail(store.status());
  auto ws = FindWorkspace(**store, workspace);
  if (!ws.ok()) return Fail(ws.status());
  std::vector<TokenRecord> tokens;
  Status st = (*store)->Read([&](ReadTx& tx) {
    auto list = tx.tokens().List(ws->id);
    if (!list.ok()) return list.status();
    tokens = std::move(*list);
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st);
  // An OAuth-issued token's label is its client's name, and CLIENT its client_id.
  std::cout << "ID\tSCOPES\tCREATED\tSTATUS\tLABEL\tCLIENT\n";
  for (const TokenRecord& t : tokens) {
    std::cout << t.id << "\t" << FormatScopes(t.scopes) << "\t" << FormatTime(t.created_at) << "\t"
              << (t.revoked_at ? "revoked " + FormatTime(*t.revoked_at) : "active") << "\t"
              << t.label << "\t" << (t.client_id.empty() ? "-" : t.client_id) << "\n";
  }
  return 0;
}

int CmdTokenRevoke(const std::string& data, const std::string& workspace,
                   const std::string& token_id) {
  auto store = OpenExisting(data);
  if (!store.ok()) return Fail(store.status());
  Status st = RevokeToken(**store, ProcessClock(), workspace, token_id);
  if (!st.ok()) return Fail(st);
  std::cout << "revoked " << token_id << "\n";
  return 0;
}

int CmdTokenCheck(const std::string& data, const std::string& workspace,
                  const std::string& secret) {
  auto store = OpenExisting(data);
  if (!store.ok()) return Fail(store.status());
  auto auth = Authenticate(**store, secret);
  if (!auth.ok() || auth->workspace_name != workspace) {
    std::cerr << "refused: not a valid token of workspace " << workspace << "\n";
    return 1;
  }
  std::cout << "ok: " << auth->token_id << " (" << FormatScopes(auth->scopes) << ")\n";
  return 0;
}

int CmdIngest(const std::string& data, const std::string& workspace, const std::string& file) {
  auto input = ReadInput(file);
  if (!input.ok()) return Fail(input.status());
  const std::string& body = *input;
  auto store = Open(data);
  if (!store.ok()) return Fail(store.status());
  auto ws = EnsureWorkspace(**store, ProcessClock(), workspace);
  if (!ws.ok()) return Fail(ws.status());
  auto report = IngestJsonl(**store, ProcessClock(), ws->id, body);
  if (!report.ok()) return Fail(report.status());
  PrintReport(*report);
  return 0;
}

int CmdSync(const std::string& data, const std::string& config_path) {
  auto config = LoadConfig(config_path);
  if (!config.ok()) return Fail(config.status());
  if (config->imap.empty() && config->calendars.empty()) {
    return Fail(Status::InvalidArgument(
        "config " + config_path +
        " names no connector ([[connectors.imap]], [[connectors.calendar]])"));
  }
  auto store = Open(data);
  if (!store.ok()) return Fail(store.status());
  int rc = 0;
  // Each source on its own: one that fails does not stop the others.
  for (const auto& source : IncomingSources(*config)) {
    auto pass = source->Pass(**store, ProcessClock(), nullptr);
    if (pass.ok()) {
      std::cout << source->Name() << " (" << source->Workspace() << "): " << pass->summary << "\n";
    } else {
      std::cerr << "error: " << pass.status().message() << "\n";
      rc = 1;
    }
  }
  return rc;
}

int CmdRulesImport(const std::string& data, const std::string& workspace, const std::string& file) {
  auto input = ReadInput(file);
  if (!input.ok()) return Fail(input.status());
  auto store = Open(data);
  if (!store.ok()) return Fail(store.status());
  auto ws = EnsureWorkspace(**store, ProcessClock(), workspace);
  if (!ws.ok()) return Fail(ws.status());
  auto report = ImportRules(**store, ProcessClock(), ws->id, *input);
  if (!report.ok()) return Fail(Status::InvalidArgument(file + ": " + report.status().message()));
  PrintRulesReport(*report);
  return 0;
}

int CmdRulesList(const std::string& data, const std::string& workspace, bool all) {
  auto store = OpenExisting(data);
  if (!store.ok()) return Fail(store.status());
  auto ws = FindWorkspace(**store, workspace);
  if (!ws.ok()) return Fail(ws.status());
  std::vector<Rule> rules;
  Status st = (*store)->Read([&](ReadTx& tx) {
    auto list = tx.rules().List(ws->id, /*active_only=*/false);
    if (!list.ok()) return list.status();
    rules = std::move(*list);
    // Without --all: the rules in force and the proposals waiting for the person.
    if (!all) {
      std::erase_if(rules, [](const Rule& r) {
        return r.status != RuleStatus::kActive && r.status != RuleStatus::kProposed;
      });
    }
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st);
  // Active rules in evaluation order (triage first), then proposals and the rest.
  std::vector<Rule> active, retired;
  for (Rule& r : rules) (r.active ? active : retired).push_back(std::move(r));
  SortForEvaluation(active);
  std::stable_partition(active.begin(), active.end(),
                        [](const Rule& r) { return r.kind == RuleKind::kTriage; });
  ConfidenceThresholds thresholds;
  std::stable_partition(retired.begin(), retired.end(),
                        [](const Rule& r) { return r.status == RuleStatus::kProposed; });
  std::cout << "ID\tNAME\tKIND\tEFFECT\tPRIORITY\tCONFIDENCE\tSUPPORT\tHITS\tSTATUS\tSUMMARY\n";
  for (const auto* group : {&active, &retired}) {
    for (const Rule& r : *group) {
      std::string effect(r.then.triage_class ? Name(*r.then.triage_class) : "");
      if (r.then.max_level) effect = "max_level=" + std::to_string(*r.then.max_level);
      if (r.then.block) effect += effect.empty() ? "block" : ",block";
      if (r.then.urgent) effect += effect.empty() ? "urgent" : ",urgent";
      std::cout << r.id << "\t" << r.name << "\t" << r.kind << "\t" << effect << "\t" << r.priority
                << "\t" << ConfidenceLabel(r, thresholds) << "\t" << r.support << "\t" << r.hits
                << "\t" << r.status << (r.origin == RuleOrigin::kLearned ? " (learned)" : "")
                << "\t" << r.summary << "\n";
    }
  }
  return 0;
}

int CmdLearn(const std::string& data, const std::string& workspace) {
  auto store = OpenExisting(data);
  if (!store.ok()) return Fail(store.status());
  auto ws = FindWorkspace(**store, workspace);
  if (!ws.ok()) return Fail(ws.status());
  auto report = Learn(**store, ProcessClock(), ws->id, LearningConfig{});
  if (!report.ok()) return Fail(report.status());
  std::cout << "learned: " << report->proposed << " proposed, " << report->updated << " updated, "
            << report->retired << " retired; agent_version " << report->agent_version << "\n";
  return 0;
}

int CmdRulesDecide(const std::string& data, const std::string& workspace,
                   const std::string& rule_id, bool accept) {
  auto store = OpenExisting(data);
  if (!store.ok()) return Fail(store.status());
  auto ws = FindWorkspace(**store, workspace);
  if (!ws.ok()) return Fail(ws.status());
  auto rule = accept ? AcceptRule(**store, ProcessClock(), ws->id, rule_id)
                     : RejectRule(**store, ProcessClock(), ws->id, rule_id);
  if (!rule.ok()) return Fail(rule.status());
  auto now = FindWorkspace(**store, workspace);
  if (!now.ok()) return Fail(now.status());
  std::cout << (accept ? "accepted " : "rejected ") << rule->id << " (" << rule->name
            << "); agent_version " << now->agent_version << "\n";
  return 0;
}

int CmdTrustSet(const std::string& data, const std::string& workspace, const std::string& cls,
                const std::string& scope, std::optional<int> level, std::optional<int> ceiling) {
  if (!level && !ceiling) return Fail(Status::InvalidArgument("give --level, --ceiling or both"));
  auto store = Open(data);
  if (!store.ok()) return Fail(store.status());
  auto ws = EnsureWorkspace(**store, ProcessClock(), workspace);
  if (!ws.ok()) return Fail(ws.status());
  std::optional<Decision> moved;
  Status st = (*store)->Write([&](WriteTx& tx) -> Status {
    auto resolved = ResolveTrustScope(tx, ws->id, scope);
    if (!resolved.ok()) return resolved.status();
    auto d = SetTrustByPerson(tx, ProcessClock(), ws->id, cls, *resolved, level, ceiling,
                              TrustConfig{}, Actor{"cli", "", ""});
    if (!d.ok()) return d.status();
    moved = std::move(*d);
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st);
  std::cout << "trust " << cls << " " << scope << ":"
            << (level ? " level " + std::to_string(*level) + " (" + LevelName(*level) + ")" : "")
            << (ceiling ? " ceiling " + std::to_string(*ceiling) : "") << "; agent_version "
            << moved->agent_version << "; decision " << moved->id << "\n";
  return 0;
}

int CmdTrustList(const std::string& data, const std::string& workspace) {
  auto store = OpenExisting(data);
  if (!store.ok()) return Fail(store.status());
  auto ws = FindWorkspace(**store, workspace);
  if (!ws.ok()) return Fail(ws.status());
  std::vector<TrustSetting> rows;
  std::map<std::string, std::string> names;
  Status st = (*store)->Read([&](ReadTx& tx) -> Status {
    auto list = tx.trust().List(ws->id);
    if (!list.ok()) return list.status();
    rows = std::move(*list);
    for (const TrustSetting& t : rows) {
      if (t.scope.rfind("entity:", 0) == 0) {
        auto e = tx.entities().Get(ws->id, t.scope.substr(7));
        if (e.ok()) names[t.scope] = e->name;
      }
    }
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st);
  TrustConfig defaults;
  std::cout << "CLASS\tSCOPE\tLEVEL\tCEILING\tUPDATED\n";
  std::cout << "communicate\t(built-in default)\t" << defaults.default_level << " ("
            << LevelName(defaults.default_level) << ")\t-\t-\n";
  for (const TrustSetting& t : rows) {
    std::string scope = t.scope;
    if (names.count(t.scope)) scope += " (" + names[t.scope] + ")";
    std::cout << t.action_class << "\t" << scope << "\t"
              << (t.level ? std::to_string(*t.level) + " (" + LevelName(*t.level) + ")" : "-")
              << "\t" << (t.ceiling ? std::to_string(*t.ceiling) : "-") << "\t"
              << FormatTime(t.updated_at) << "\n";
  }
  return 0;
}

int CmdQuotaSet(const std::string& data, const std::string& workspace, const std::string& name,
                const std::string& value) {
  if (FindQuota(name) == nullptr) {
    std::string known;
    for (const QuotaField& f : kQuotaFields)
      known += (known.empty() ? "" : ", ") + std::string(f.name);
    return Fail(Status::InvalidArgument("unknown quota '" + name + "' (" + known + ")"));
  }
  std::optional<int64_t> limit;
  if (value != "default") {
    size_t used = 0;
    try {
      limit = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (!limit || used != value.size() || *limit < 0 || *limit > kMaxQuotaValue) {
      return Fail(Status::InvalidArgument("value must be a whole number from 0 to " +
                                          std::to_string(kMaxQuotaValue) + ", or 'default'"));
    }
  }
  auto store = OpenExisting(data);
  if (!store.ok()) return Fail(store.status());
  auto ws = FindWorkspace(**store, workspace);
  if (!ws.ok()) return Fail(ws.status());
  Status st = (*store)->Write(
      [&](WriteTx& tx) -> Status { return tx.quotas().SetOverride(ws->id, name, limit); });
  if (!st.ok()) return Fail(st);
  std::cout << "quota " << name << " for " << workspace << ": "
            << (limit ? std::to_string(*limit) : "the default") << "\n";
  return 0;
}

int CmdQuotaList(const std::string& data, const std::string& workspace, const std::string& config) {
  auto loaded = LoadConfig(config);
  if (!loaded.ok()) return Fail(loaded.status());
  auto store = OpenExisting(data);
  if (!store.ok()) return Fail(store.status());
  auto ws = FindWorkspace(**store, workspace);
  if (!ws.ok()) return Fail(ws.status());
  std::vector<std::pair<std::string, int64_t>> overrides;
  Status st = (*store)->Read([&](ReadTx& tx) -> Status {
    auto got = tx.quotas().Overrides(ws->id);
    if (!got.ok()) return got.status();
    overrides = std::move(*got);
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st);
  const QuotaLimits& defaults = loaded->actions.quotas;
  const QuotaLimits built_in;
  std::cout << "QUOTA\tLIMIT\tSOURCE\n";
  for (const QuotaField& f : kQuotaFields) {
    int64_t v = defaults.*(f.value);
    // A config value equal to the built-in default reads as the default: same limit.
    std::string source = v == built_in.*(f.value) ? "default" : "config";
    for (const auto& [name, value] : overrides) {
      if (name == f.name) {
        v = value;
        source = "workspace";
      }
    }
    std::cout << f.name << "\t" << v << "\t" << source << "\n";
  }
  return 0;
}

int CmdLedgerVerify(const std::string& data, const std::string& workspace) {
  auto store = OpenExisting(data);
  if (!store.ok()) return Fail(store.status());
  std::vector<Workspace> workspaces;
  if (!workspace.empty()) {
    auto ws = FindWorkspace(**store, workspace);
    if (!ws.ok()) return Fail(ws.status());
    workspaces.push_back(*ws);
  } else {
    Status st = (*store)->Read([&](ReadTx& tx) {
      auto list = tx.workspaces().List();
      if (!list.ok()) return list.status();
      workspaces = std::move(*list);
      return Status::Ok();
    });
    if (!st.ok()) return Fail(st);
  }
  bool all_ok = true;
  for (const Workspace& ws : workspaces) {
    auto check = VerifyLedger(**store, ws.id);
    if (!check.ok()) return Fail(check.status());
    if (check->ok) {
      std::cout << ws.name << ": ok, " << check->entries << " entries\n";
    } else {
      all_ok = false;
      std::cout << ws.name << ": TAMPERED: " << check->problem << "\n";
    }
  }
  return all_ok ? 0 : 1;
}

int CmdMigrate(const std::string& data) {
  auto store = Open(data);  // opening applies pending migrations
  if (!store.ok()) return Fail(store.status());
  auto version = (*store)->SchemaVersion();
  if (!version.ok()) return Fail(version.status());
  std::cout << "schema at migration " << *version << "\n";
  return 0;
}

int CmdDemo(const std::string& data, const std::string& today) {
  TimePoint now = ProcessClock().Now();
  if (!today.empty()) {
    auto t = ParseTime(today + "T12:00:00Z");
    if (!t.ok()) return Fail(Status::InvalidArgument("--today: expected YYYY-MM-DD, got " + today));
    now = *t;
  }
  auto store = Open(data);
  if (!store.ok()) return Fail(store.status());
  auto ws = EnsureWorkspace(**store, ProcessClock(), "demo");
  if (!ws.ok()) return Fail(ws.status());
  // Placed in the present (demo_world.h), once: a demo loaded before keeps its days, found
  // from where its first episode lies, so that loading it again adds nothing.
  int shift = DemoShiftDays(now);
  DemoAnchor anchor = DemoFirstEpisode();
  Status st = (*store)->Read([&](ReadTx& tx) -> Status {
    auto stored = tx.episodes().FindByExternalId(ws->id, anchor.external_id);
    if (!stored.ok() && stored.status().code() == Code::kNotFound) return Status::Ok();
    if (!stored.ok()) return stored.status();
    shift = static_cast<int>(
        std::chrono::floor<std::chrono::days>(stored->occurred_at - anchor.occurred_at).count());
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st);
  auto world = ShiftDemoJsonl(DemoWorldJsonl(), shift);
  if (!world.ok()) return Fail(world.status());
  auto this_week = ShiftDemoJsonl(DemoWeekJsonl(), shift);
  if (!this_week.ok()) return Fail(this_week.status());
  // History first, then the rules learned from it, then the current week, which is triaged
  // under those rules. Each step is idempotent.
  auto history = IngestJsonl(**store, ProcessClock(), ws->id, *world);
  if (!history.ok()) return Fail(history.status());
  auto rules = ImportRules(**store, ProcessClock(), ws->id, DemoRulesYaml());
  if (!rules.ok()) return Fail(rules.status());
  auto week = IngestJsonl(**store, ProcessClock(), ws->id, *this_week);
  if (!week.ok()) return Fail(week.status());
  // Then the learner, over the whole history: it finds the Marcus rule the file ships by
  // hand (docs/learning.md), and says so without proposing it (the person's rule already
  // does it); the rest it proposes for the person to accept.
  auto learned = Learn(**store, ProcessClock(), ws->id, LearningConfig{});
  if (!learned.ok()) return Fail(learned.status());
  std::vector<Rule> proposals;
  st = (*store)->Read([&](ReadTx& tx) -> Status {
    auto list = tx.rules().List(ws->id, /*active_only=*/false);
    if (!list.ok()) return list.status();
    for (Rule& r : *list) {
      if (r.status == RuleStatus::kProposed) proposals.push_back(std::move(r));
    }
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st);
  std::cout << "workspace demo: placed " << (shift >= 0 ? "+" : "") << shift
            << " days from its files' dates (its history starts "
            << FormatTime(anchor.occurred_at + std::chrono::days(shift)).substr(0, 10) << ")\n";
  std::cout << "workspace demo: history: ";
  PrintReport(*history);
  std::cout << "workspace demo: ";
  PrintRulesReport(*rules);
  std::cout << "workspace demo: this week: ";
  PrintReport(*week);
  std::cout << "workspace demo: learned: " << learned->proposed << " proposed, " << learned->updated
            << " updated, " << learned->retired << " retired\n";
  for (const std::string& c : learned->covered) {
    std::cout << "workspace demo: found, not proposed: " << c << "\n";
  }
  for (const Rule& r : proposals) {
    std::cout << "workspace demo: proposed " << r.id << ": " << r.summary << "\n";
  }
  return 0;
}

int CmdInboxLink(const std::string& data, const std::string& workspace,
                 const std::string& base_url) {
  auto store = OpenExisting(data);
  if (!store.ok()) return Fail(store.status());
  auto link = CreateSignInLink(**store, ProcessClock(), workspace, base_url);
  if (!link.ok()) return Fail(link.status());
  std::cout << link->url << "\n";
  std::cerr << "one use, until " << FormatTime(link->expires_at) << "\n";
  return 0;
}

int CmdInboxList(const std::string& data, const std::string& workspace) {
  auto store = OpenExisting(data);
  if (!store.ok()) return Fail(store.status());
  std::vector<std::pair<Decision, Action>> rows;
  Status st = (*store)->Read([&](ReadTx& tx) -> Status {
    auto ws = tx.workspaces().FindByName(workspace);
    if (!ws.ok()) return ws.status();
    DecisionFilter f;
    f.decision_class = DecisionClass::kActionProposed;
    f.status = DecisionStatus::kPending;
    auto pending = tx.decisions().List(ws->id, f, 1000);
    if (!pending.ok()) return pending.status();
    for (Decision& d : *pending) {
      auto a = tx.actions().FindByDecision(ws->id, d.id);
      if (!a.ok()) return a.status();
      rows.emplace_back(std::move(d), std::move(*a));
    }
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st);
  std::cout << "DECISION\tRECIPIENT\tLEVEL\tDUE\tDRAFT\n";
  for (const auto& [d, a] : rows) {
    std::string draft = a.draft;
    std::replace(draft.begin(), draft.end(), '\n', ' ');
    std::replace(draft.begin(), draft.end(), '\t', ' ');
    std::cout << d.id << "\t" << a.recipient << "\t" << a.level << " (" << LevelName(a.level)
              << ")\t" << (a.due_at ? FormatTime(*a.due_at) : "-") << "\t" << draft << "\n";
  }
  return 0;
}

int CmdInboxDecide(const std::string& data, const std::string& workspace, const std::string& config,
                   const std::string& decision_id, bool approve,
                   const std::optional<std::string>& text) {
  auto cfg = LoadConfig(config);
  if (!cfg.ok()) return Fail(cfg.status());
  auto store = OpenExisting(data);
  if (!store.ok()) return Fail(store.status());
  std::string ws_id;
  Status st = (*store)->Read([&](ReadTx& tx) -> Status {
    auto ws = tx.workspaces().FindByName(workspace);
    if (!ws.ok()) return ws.status();
    ws_id = ws->id;
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st);
  ActionEngine engine(**store, ProcessClock(), cfg->actions);
  Actor by{"cli", "", ""};
  auto r = approve ? engine.Approve(ws_id, decision_id, text, by)
                   : engine.Reject(ws_id, decision_id, text, by);
  if (!r.ok()) return Fail(r.status());
  std::cout << r->message << "\n";
  return 0;
}

}  // namespace cortex
