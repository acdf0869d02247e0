#include "store/records.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "keel/error_codes.h"

namespace keel {
namespace {

// Each value's stored text parses back to it; the text is what earlier versions stored.
template <typename Enum, typename Parse>
void expect_names(const std::vector<std::pair<Enum, std::string>>& names, Parse parse) {
  for (const auto& [value, text] : names) {
    EXPECT_EQ(to_string(value), text);
    auto parsed = parse(text);
    ASSERT_TRUE(parsed) << text;
    EXPECT_EQ(*parsed, value) << text;
  }
}

template <typename Parse>
void expect_refused(Parse parse, const std::string& text) {
  auto parsed = parse(text);
  ASSERT_FALSE(parsed) << text;
  EXPECT_EQ(parsed.error().code(), codes::kStoreDecode) << text;
  EXPECT_NE(parsed.error().message().find("'" + text + "'"), std::string::npos) << parsed.error().message();
}

TEST(RecordsTest, TurnKindsKeepTheirStoredText) {
  expect_names<TurnKind>({{TurnKind::kUser, "user"}, {TurnKind::kTitle, "title"}}, parse_turn_kind);
  expect_refused(parse_turn_kind, "chore");
  expect_refused(parse_turn_kind, "User");
}

TEST(RecordsTest, ApprovalStatesKeepTheirStoredText) {
  expect_names<ApprovalState>({{ApprovalState::kPending, "pending"}, {ApprovalState::kDecided, "decided"}},
                              parse_approval_state);
  expect_refused(parse_approval_state, "maybe");
}

TEST(RecordsTest, InteractionKindsKeepTheirStoredText) {
  expect_names<InteractionKind>({{InteractionKind::kAskUser, "ask_user"},
                                 {InteractionKind::kElicitation, "elicitation"},
                                 {InteractionKind::kTimer, "timer"}},
                                parse_interaction_kind);
  expect_refused(parse_interaction_kind, "alarm");
  expect_refused(parse_interaction_kind, "");
}

TEST(RecordsTest, ClaimStatesKeepTheirStoredText) {
  expect_names<ClaimState>({{ClaimState::kWaiting, "waiting"},
                            {ClaimState::kAnswered, "answered"},
                            {ClaimState::kClaimed, "claimed"}},
                           parse_claim_state);
  expect_refused(parse_claim_state, "gone");
}

TEST(RecordsTest, SteerStatesKeepTheirStoredText) {
  expect_names<SteerState>({{SteerState::kPending, "pending"}, {SteerState::kMaterialized, "materialized"}},
                           parse_steer_state);
  expect_refused(parse_steer_state, "lost");
}

}  // namespace
}  // namespace keel
