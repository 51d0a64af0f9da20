// A transaction as the engines see it: it hands out the store's areas, each the queries of
// one part of the model (store/<area>.h, its SQL beside it in store/<area>_sql.cc). A ReadTx
// hands out readers; a WriteTx, writers (a writer is also a reader). An area's accessor is
// defined in the area's header, so code that uses an area includes it, and only it.
//
//   Status st = store.Write([&](WriteTx& tx) {
//     auto who = tx.entities().Get(ws, entity_id);
//     ...
//     return tx.decisions().Insert(decision);
//   });
//
// Not thread-safe: a transaction is used only by the function it is passed to. Every query
// of workspace data takes the workspace id: there is no unscoped read.
#pragma once

namespace cortex {

struct TxState;  // the connection and what the transaction remembers (store/sql_tx.h)

class WorkspacesReader;
class WorkspacesWriter;
class TokensReader;
class TokensWriter;
class EntitiesReader;
class EntitiesWriter;
class EpisodesReader;
class EpisodesWriter;
class RulesReader;
class RulesWriter;
class DecisionsReader;
class DecisionsWriter;
class NotificationsReader;
class NotificationsWriter;
class ActionsReader;
class ActionsWriter;
class TrustReader;
class TrustWriter;
class LedgerReader;
class LedgerWriter;
class OutboxReader;
class OutboxWriter;
class SessionsReader;
class SessionsWriter;
class QuotasReader;
class QuotasWriter;
class InboxReader;
class InboxWriter;
class OAuthReader;
class OAuthWriter;
class CalendarReader;
class CalendarWriter;
class McpCallsReader;
class McpCallsWriter;

class ReadTx {
 public:
  explicit ReadTx(TxState& state) : s_(state) {}
  ReadTx(const ReadTx&) = delete;
  ReadTx& operator=(const ReadTx&) = delete;

  WorkspacesReader workspaces() const;        // workspaces, their settings and counts
  TokensReader tokens() const;                // API tokens (hashes only)
  EntitiesReader entities() const;            // counterparties, identifiers, tags
  EpisodesReader episodes() const;            // episodes and the look-ups triage makes
  RulesReader rules() const;                  // triage and action rules
  DecisionsReader decisions() const;          // every decision
  NotificationsReader notifications() const;  // triaged episodes and when they surface
  ActionsReader actions() const;              // actions and their state
  TrustReader trust() const;                  // trust settings and approval streaks
  LedgerReader ledger() const;                // the hash-chained action ledger
  OutboxReader outbox() const;                // deliveries waiting or done
  SessionsReader sessions() const;            // MCP sessions of the 2025-11-25 era
  QuotasReader quotas() const;                // call counts, inference use, overrides
  InboxReader inbox() const;                  // web inbox sign-in links and sessions
  OAuthReader oauth() const;                  // OAuth clients, codes, refresh tokens
  CalendarReader calendar() const;            // calendar connectors' occurrences
  McpCallsReader calls() const;               // what MCP calls waiting on a client keep

 protected:
  TxState& s_;
};

class WriteTx : public ReadTx {
 public:
  using ReadTx::ReadTx;

  WorkspacesWriter workspaces() const;
  TokensWriter tokens() const;
  EntitiesWriter entities() const;
  EpisodesWriter episodes() const;
  RulesWriter rules() const;
  DecisionsWriter decisions() const;
  NotificationsWriter notifications() const;
  ActionsWriter actions() const;
  TrustWriter trust() const;
  LedgerWriter ledger() const;
  OutboxWriter outbox() const;
  SessionsWriter sessions() const;
  QuotasWriter quotas() const;
  InboxWriter inbox() const;
  OAuthWriter oauth() const;
  CalendarWriter calendar() const;
  McpCallsWriter calls() const;
};

}  // namespace cortex
