// Who made a decision a person may make (approve, edit, reject, move trust), and through
// which channel. Recorded in the ledger and in trust_transition decisions; decision.inspect
// shows it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace cortex {

struct Actor {
  // web (the inbox), cli, mcp (a token with the `approve` scope), elicitation (the person
  // answering their MCP client), or engine (Cortex itself: an undo window, an expiry, earned
  // trust).
  std::string channel;
  std::string token_id;  // mcp and elicitation: the token of the session
  std::string session;   // web: the inbox session's id (not its secret)

  static Actor Engine() { return Actor{"engine", "", ""}; }
  bool IsPerson() const { return channel != "engine"; }

  // {"channel": ..., "token_id"?: ..., "session"?: ...}
  nlohmann::json Json() const {
    nlohmann::json j = {{"channel", channel}};
    if (!token_id.empty()) j["token_id"] = token_id;
    if (!session.empty()) j["session"] = session;
    return j;
  }
};

}  // namespace cortex
