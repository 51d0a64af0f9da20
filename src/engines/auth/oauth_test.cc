#include "engines/auth/oauth.h"

#include <gtest/gtest.h>

#include "core/crypto.h"
#include "core/time.h"
#include "engines/auth/tokens.h"
#include "store/oauth.h"
#include "store/tokens.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

using nlohmann::json;

constexpr char kResource[] = "http://127.0.0.1:8787/mcp";
constexpr char kIssuer[] = "http://127.0.0.1:8787";
constexpr char kRedirect[] = "http://127.0.0.1/cb";

// The query parameter `name` of `url`, percent-decoded.
std::string QueryParam(const std::string& url, const std::string& name) {
  auto params = ParseForm(url.substr(url.find('?') + 1));
  if (!params.ok() || params->count(name) == 0) return "";
  return params->at(name);
}

class OAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(EnsureWorkspace(*store_, clock_, "alpha").ok());
    OAuthReply reg = RegisterClient(*store_, clock_,
                                    json{{"redirect_uris", {kRedirect}}, {"client_name", "Agent"}});
    ASSERT_EQ(reg.status, 201) << reg.body;
    client_id_ = reg.body["client_id"];
    auto ws = FindWorkspace(*store_, "alpha");
    person_ = InboxAuth{ws->id, ws->name, "ses_x"};
  }

  // A code for `verifier`, granted `scopes`.
  std::string Code(const std::string& verifier, unsigned scopes = kScopeRead | kScopeAct) {
    AuthorizeCheck check = CheckAuthorize(*store_, clock_,
                                          {{"client_id", client_id_},
                                           {"redirect_uri", "http://127.0.0.1:5000/cb"},
                                           {"response_type", "code"},
                                           {"code_challenge", Sha256Base64Url(verifier)},
                                           {"code_challenge_method", "S256"},
                                           {"state", "st"}},
                                          kResource);
    EXPECT_TRUE(check.request) << check.error << ": " << check.description;
    auto url = IssueCode(*store_, clock_, *check.request, person_, scopes, kIssuer);
    EXPECT_TRUE(url.ok());
    EXPECT_EQ(QueryParam(*url, "state"), "st");
    return QueryParam(*url, "code");
  }

  OAuthReply Exchange(const std::string& code, const std::string& verifier) {
    return ExchangeToken(*store_, clock_,
                         {{"grant_type", "authorization_code"},
                          {"code", code},
                          {"client_id", client_id_},
                          {"redirect_uri", "http://127.0.0.1:5000/cb"},
                          {"code_verifier", verifier}},
                         kResource);
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-10T09:00:00Z")};
  std::string client_id_;
  InboxAuth person_;
  const std::string verifier_ = std::string(43, 'v');
};

TEST_F(OAuthTest, ACodeBecomesATokenBoundToItsWorkspaceAndResource) {
  OAuthReply r = Exchange(Code(verifier_), verifier_);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["scope"], "read act");
  std::string access = r.body["access_token"];
  auto auth = Authenticate(*store_, access, clock_, kResource);
  ASSERT_TRUE(auth.ok());
  EXPECT_EQ(auth->workspace_name, "alpha");
  EXPECT_EQ(auth->scopes, kScopeRead | kScopeAct);
  // Another resource (another server's name for itself) does not accept it.
  EXPECT_EQ(Authenticate(*store_, access, clock_, "https://other.example/mcp").status().code(),
            Code::kUnauthorized);
  // It expires after an hour; the refresh token gives a new one.
  clock_.Advance(kOAuthAccessLifetime);
  EXPECT_EQ(Authenticate(*store_, access, clock_, kResource).status().code(), Code::kUnauthorized);
  OAuthReply fresh = ExchangeToken(*store_, clock_,
                                   {{"grant_type", "refresh_token"},
                                    {"refresh_token", r.body["refresh_token"]},
                                    {"client_id", client_id_}},
                                   kResource);
  ASSERT_EQ(fresh.status, 200) << fresh.body;
  EXPECT_TRUE(Authenticate(*store_, fresh.body["access_token"], clock_, kResource).ok());
}

TEST_F(OAuthTest, AnExpiredCodeIsRefusedAndIssuesNothing) {
  std::string code = Code(verifier_);
  clock_.Advance(kOAuthCodeLifetime);
  OAuthReply r = Exchange(code, verifier_);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"], "invalid_grant");
  EXPECT_FALSE(r.body.contains("access_token"));
  auto ws = FindWorkspace(*store_, "alpha");
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    auto tokens = tx.tokens().List(ws->id);
                    EXPECT_TRUE(tokens.ok() && tokens->empty());
                    return Status::Ok();
                  })
                  .ok());
}

TEST_F(OAuthTest, ExpiredCodesAndRefreshTokensAreForgotten) {
  std::string code = Code(verifier_);
  OAuthReply r = Exchange(Code(verifier_), verifier_);
  ASSERT_EQ(r.status, 200);
  clock_.Advance(kOAuthRefreshLifetime + std::chrono::hours(1));
  ASSERT_TRUE(
      store_->Write([&](WriteTx& tx) { return tx.oauth().DeleteExpiredBefore(clock_.Now()); })
          .ok());
  ASSERT_TRUE(
      store_
          ->Read([&](ReadTx& tx) {
            EXPECT_EQ(tx.oauth().FindCode(Sha256Hex(code)).status().code(), Code::kNotFound);
            EXPECT_EQ(tx.oauth()
                          .FindRefresh(Sha256Hex(r.body["refresh_token"].get<std::string>()))
                          .status()
                          .code(),
                      Code::kNotFound);
            return Status::Ok();
          })
          .ok());
}

TEST_F(OAuthTest, UnusedRegistrationsAreForgottenAfterADay) {
  // client_id_ gets a token; `idle` registers and nobody consents; `late` registers later.
  auto reg = [&] {
    OAuthReply r = RegisterClient(*store_, clock_, json{{"redirect_uris", {kRedirect}}});
    EXPECT_EQ(r.status, 201) << r.body;
    return r.body["client_id"].get<std::string>();
  };
  std::string idle = reg();
  ASSERT_EQ(Exchange(Code(verifier_), verifier_).status, 200);
  clock_.Advance(kOAuthUnusedClient);
  std::string late = reg();
  clock_.Advance(std::chrono::minutes(1));
  ASSERT_TRUE(store_
                  ->Write([&](WriteTx& tx) {
                    CORTEX_RETURN_IF_ERROR(tx.oauth().DeleteExpiredBefore(clock_.Now()));
                    return tx.oauth().DeleteUnusedClientsBefore(clock_.Now() - kOAuthUnusedClient);
                  })
                  .ok());
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    EXPECT_EQ(tx.oauth().FindClient(idle).status().code(), Code::kNotFound);
                    EXPECT_TRUE(tx.oauth().FindClient(client_id_).ok());  // its token names it
                    EXPECT_TRUE(tx.oauth().FindClient(late).ok());        // not a day old yet
                    return Status::Ok();
                  })
                  .ok());
}

TEST_F(OAuthTest, RedirectUris) {
  EXPECT_TRUE(RedirectUriAllowed("https://claude.ai/api/mcp/auth_callback"));
  EXPECT_TRUE(RedirectUriAllowed("http://localhost:6274/oauth/callback"));
  EXPECT_TRUE(RedirectUriAllowed("http://[::1]/cb"));
  EXPECT_TRUE(RedirectUriAllowed("com.example.app:/oauth"));
  EXPECT_FALSE(RedirectUriAllowed("http://example.com/cb"));
  EXPECT_FALSE(RedirectUriAllowed("http://127.0.0.1.evil.example/cb"));
  EXPECT_FALSE(RedirectUriAllowed("https://user@example.com/cb"));
  EXPECT_FALSE(RedirectUriAllowed("javascript:alert(1)"));
  EXPECT_FALSE(RedirectUriAllowed("https://example.com/cb#x"));
  // Loopback: any port, the rest exact.
  EXPECT_TRUE(RedirectUriMatches("http://127.0.0.1/cb", "http://127.0.0.1:49152/cb"));
  EXPECT_FALSE(RedirectUriMatches("http://127.0.0.1/cb", "http://127.0.0.1:49152/cb2"));
  EXPECT_FALSE(RedirectUriMatches("http://127.0.0.1/cb", "http://localhost:49152/cb"));
  EXPECT_FALSE(RedirectUriMatches("https://a.example/cb", "https://a.example:444/cb"));
  EXPECT_FALSE(RedirectUriMatches("https://a.example/cb", "https://a.example/cb?x=1"));
}

TEST_F(OAuthTest, FormsAreParsedStrictly) {
  auto ok = ParseForm("a=1&b=x+y%2Fz&c=");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->at("b"), "x y/z");
  EXPECT_EQ(ok->at("c"), "");
  EXPECT_FALSE(ParseForm("a=1&a=2").ok());
  EXPECT_FALSE(ParseForm("a=%zz").ok());
  EXPECT_FALSE(ParseForm("a=%2").ok());
  auto scopes = ParseOAuthScopes("read act approve");
  ASSERT_TRUE(scopes.ok());
  EXPECT_EQ(*scopes, kScopeRead | kScopeAct | kScopeApprove);
  EXPECT_FALSE(ParseOAuthScopes("read admin").ok());
}

}  // namespace
}  // namespace cortex
