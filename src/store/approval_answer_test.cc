#include "store/approval_answer.h"

#include <gtest/gtest.h>

#include <vector>

#include "keel/error_codes.h"

namespace keel {
namespace {

using nlohmann::json;

// Every shape keel has written to approvals.decision (engine/waits.cc), as it is stored.
TEST(ApprovalAnswerTest, DecodesEveryStoredShapeAndEncodesItBackUnchanged) {
  const std::vector<std::pair<json, ApprovalAnswer>> shapes = {
      {{{"decision", "accept"}}, {.choice = ApprovalChoice::kAccept}},
      {{{"decision", "acceptForSite"}}, {.choice = ApprovalChoice::kAcceptForSite}},
      {{{"decision", "acceptForSite"}, {"remember", "untilRevoked"}},
       {.choice = ApprovalChoice::kAcceptForSite, .remember = "untilRevoked"}},
      {{{"decision", "decline"}, {"reason", "not on main"}},
       {.choice = ApprovalChoice::kDecline, .reason = "not on main"}},
  };
  for (const auto& [stored, typed] : shapes) {
    auto decoded = decode_approval_answer(stored, "decision of approval a1");
    ASSERT_TRUE(decoded) << stored << ": " << decoded.error().to_string();
    EXPECT_EQ(*decoded, typed) << stored;
    EXPECT_EQ(encode_approval_answer(typed), stored);
  }
  EXPECT_TRUE(ApprovalAnswer{.choice = ApprovalChoice::kAcceptForSite}.accepts());
  EXPECT_FALSE(ApprovalAnswer{.choice = ApprovalChoice::kDecline}.accepts());
}

TEST(ApprovalAnswerTest, ADamagedOrUnknownValueIsADecodeFailure) {
  const std::vector<json> damaged = {
      json(nullptr),
      json("accept"),
      json::object(),
      {{"decision", "deny"}},
      {{"decision", 1}},
      {{"decision", "accept"}, {"reason", 7}},
      {{"decision", "acceptForSite"}, {"remember", nullptr}},
      {{"decision", "accept"}, {"clientId", "c1"}},
  };
  for (const json& value : damaged) {
    auto decoded = decode_approval_answer(value, "decision of approval a1");
    ASSERT_FALSE(decoded) << value;
    EXPECT_EQ(decoded.error().code(), codes::kStoreDecode) << value;
    EXPECT_NE(decoded.error().message().find("decision of approval a1"), std::string::npos);
  }
}

TEST(ApprovalAnswerTest, ChoicesKeepTheirWireText) {
  for (ApprovalChoice choice :
       {ApprovalChoice::kAccept, ApprovalChoice::kAcceptForSite, ApprovalChoice::kDecline}) {
    EXPECT_EQ(parse_approval_choice(to_string(choice)), choice);
  }
  EXPECT_EQ(parse_approval_choice("accept_for_site").error().code(), codes::kStoreDecode);
}

}  // namespace
}  // namespace keel
