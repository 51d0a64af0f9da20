#include "engines/auth/tokens.h"

#include <gtest/gtest.h>

#include "core/crypto.h"
#include "core/time.h"
#include "store/tokens.h"
#include "store/workspaces.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

class TokensTest : public ::testing::Test {
 protected:
  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-10T09:00:00Z")};
};

TEST_F(TokensTest, CreateAuthenticateRevoke) {
  auto token = CreateToken(*store_, clock_, "alpha", kScopeRead | kScopeAct, "laptop");
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->secret.rfind("ctk_", 0), 0u);

  auto auth = Authenticate(*store_, token->secret);
  ASSERT_TRUE(auth.ok());
  EXPECT_EQ(auth->workspace_name, "alpha");
  EXPECT_TRUE(auth->Has(kScopeAct));
  EXPECT_FALSE(auth->Has(kScopeAdmin));

  ASSERT_TRUE(RevokeToken(*store_, clock_, "alpha", token->record.id).ok());
  auto after = Authenticate(*store_, token->secret);
  EXPECT_EQ(after.status().code(), Code::kUnauthorized);
  // Revoking twice says so.
  EXPECT_EQ(RevokeToken(*store_, clock_, "alpha", token->record.id).code(), Code::kNotFound);
}

TEST_F(TokensTest, OnlyTheHashIsStored) {
  auto token = CreateToken(*store_, clock_, "alpha", kScopeRead, "");
  ASSERT_TRUE(token.ok());
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    auto ws = tx.workspaces().FindByName("alpha");
                    auto list = tx.tokens().List(ws->id);
                    EXPECT_EQ(list->size(), 1u);
                    EXPECT_EQ((*list)[0].hash, Sha256Hex(token->secret));
                    EXPECT_EQ((*list)[0].hash.find(token->secret.substr(4)), std::string::npos);
                    return Status::Ok();
                  })
                  .ok());
}

TEST_F(TokensTest, UnknownAndMalformedTokensAreUnauthorized) {
  ASSERT_TRUE(CreateToken(*store_, clock_, "alpha", kScopeRead, "").ok());
  EXPECT_EQ(Authenticate(*store_, "").status().code(), Code::kUnauthorized);
  EXPECT_EQ(Authenticate(*store_, "ctk_nope").status().code(), Code::kUnauthorized);
  EXPECT_EQ(Authenticate(*store_, "ctk_" + std::string(48, 'a')).status().code(),
            Code::kUnauthorized);
}

TEST_F(TokensTest, RevokeIsScopedToTheWorkspace) {
  auto a = CreateToken(*store_, clock_, "alpha", kScopeRead, "");
  ASSERT_TRUE(CreateToken(*store_, clock_, "beta", kScopeRead, "").ok());
  EXPECT_EQ(RevokeToken(*store_, clock_, "beta", a->record.id).code(), Code::kNotFound);
  EXPECT_TRUE(Authenticate(*store_, a->secret).ok());
}

TEST(ScopesTest, ParseAndFormat) {
  EXPECT_EQ(*ParseScopes("read,act"), kScopeRead | kScopeAct);
  EXPECT_EQ(FormatScopes(kScopeRead | kScopeAdmin), "read,admin");
  auto bad = ParseScopes("read,write");
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'write'"), std::string::npos);
  EXPECT_FALSE(ParseScopes("").ok());
}

TEST(WorkspaceNameTest, Validation) {
  EXPECT_TRUE(ValidateWorkspaceName("demo").ok());
  EXPECT_TRUE(ValidateWorkspaceName("team-1_a").ok());
  EXPECT_FALSE(ValidateWorkspaceName("").ok());
  EXPECT_FALSE(ValidateWorkspaceName("Demo").ok());
  EXPECT_FALSE(ValidateWorkspaceName("-x").ok());
  EXPECT_FALSE(ValidateWorkspaceName(std::string(65, 'a')).ok());
}

}  // namespace
}  // namespace cortex
