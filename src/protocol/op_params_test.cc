#include "protocol/op_params.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "keel/engine_options.h"
#include "keel/error_codes.h"

namespace keel::protocol {
namespace {

using nlohmann::json;

template <OpKind K>
concept HasParams = requires { typename ParamsOf<K>; };

template <size_t... I>
std::vector<OpKind> kinds_with_params(std::index_sequence<I...> /*kinds*/) {
  std::vector<OpKind> out;
  ((HasParams<static_cast<OpKind>(I)> ? out.push_back(static_cast<OpKind>(I)) : void()), ...);
  return out;
}

std::string code_of(const Error& error) { return error.code(); }

TEST(OpParamsTest, EveryOpTheEngineRunsHasTypedParams) {
  constexpr size_t kKinds =
      static_cast<size_t>(OpKind::kSessionUnsubscribe) + 1;  // ops.cc asserts it is last
  const std::vector<OpKind> typed = kinds_with_params(std::make_index_sequence<kKinds>());
  for (const OpSpec& spec : all_ops()) {
    const bool has = std::find(typed.begin(), typed.end(), spec.kind) != typed.end();
    // The store commands' are store_params.h's; the session ops never reach the engine.
    const bool expected = !spec.store_command && spec.route != OpRoute::kSession;
    EXPECT_EQ(has, expected) << spec.name;
  }
}

TEST(OpParamsTest, TheAddressedThreadIsANonEmptyStringThreadId) {
  EXPECT_EQ(addressed_thread({{"threadId", "t"}}), "t");
  EXPECT_EQ(addressed_thread({{"threadId", 5}}), "");
  EXPECT_EQ(addressed_thread(json::object()), "");
  EXPECT_EQ(addressed_thread(json::array()), "");
}

TEST(OpParamsTest, ParamsMustBeAnObject) {
  EXPECT_EQ(code_of(decode<OpKind::kThreadList>(json::array()).error()), codes::kInvalidArgument);
  EXPECT_EQ(code_of(decode<OpKind::kQueueStart>("x").error()), codes::kInvalidArgument);
  EXPECT_EQ(code_of(decode<OpKind::kPolicySetMode>(5).error()), codes::kInvalidArgument);
}

TEST(OpParamsTest, InitializeSubscribesUnlessToldNot) {
  EXPECT_TRUE(decode<OpKind::kInitialize>(json::object())->subscribe);
  EXPECT_TRUE(decode<OpKind::kInitialize>({{"subscribe", nullptr}})->subscribe) << "null is absent";
  EXPECT_FALSE(decode<OpKind::kInitialize>({{"subscribe", false}})->subscribe);
  EXPECT_EQ(code_of(decode<OpKind::kInitialize>({{"subscribe", "no"}}).error()), codes::kInvalidArgument);
}

TEST(OpParamsTest, ReadsNameTheirThread) {
  EXPECT_EQ(decode<OpKind::kThreadRead>({{"threadId", "t"}})->thread_id, "t");
  EXPECT_EQ(decode<OpKind::kQueueList>({{"threadId", "t"}})->thread_id, "t");
  EXPECT_EQ(code_of(decode<OpKind::kThreadRead>(json::object()).error()), codes::kInvalidArgument);
  EXPECT_EQ(code_of(decode<OpKind::kQueueList>({{"threadId", ""}}).error()), codes::kInvalidArgument);
}

TEST(OpParamsTest, ABudgetIsAbsentOrAnIntegerInRange) {
  EXPECT_EQ(decode<OpKind::kTurnSubmit>({{"input", "x"}})->budget_tokens, std::nullopt);
  EXPECT_EQ(decode<OpKind::kTurnSubmit>({{"budgetTokens", 5}})->budget_tokens, 5);
  EXPECT_EQ(decode<OpKind::kTurnSubmit>({{"budgetTokens", kMaxBudgetTokens}})->budget_tokens,
            kMaxBudgetTokens);
  EXPECT_EQ(decode<OpKind::kRunResume>({{"additionalBudgetTokens", 7}})->additional_budget_tokens, 7);
  for (const json& bad : {json(0), json(-1), json(kMaxBudgetTokens + 1), json(1.5), json("5"),
                          json(std::numeric_limits<uint64_t>::max())}) {
    EXPECT_EQ(code_of(decode<OpKind::kTurnSubmit>({{"budgetTokens", bad}}).error()), codes::kInvalidArgument)
        << bad.dump();
    EXPECT_EQ(code_of(decode<OpKind::kRunResume>({{"additionalBudgetTokens", bad}}).error()),
              codes::kInvalidArgument)
        << bad.dump();
  }
}

TEST(OpParamsTest, ATurnsInputIsKeptForTheEngineToCheck) {
  EXPECT_EQ(decode<OpKind::kTurnSubmit>({{"input", "hi"}})->input, "hi");
  EXPECT_TRUE(decode<OpKind::kTurnSubmit>(json::object())->input.is_null())
      << "absent: the engine refuses it";
  EXPECT_EQ(decode<OpKind::kTurnInput>({{"input", 42}})->input, 42);
}

TEST(OpParamsTest, ASubmitsParentNodeIsAbsentANodeIdOrEmptyForTheRoot) {
  EXPECT_EQ(decode<OpKind::kTurnSubmit>({{"input", "x"}})->parent_node_id, std::nullopt);
  EXPECT_EQ(decode<OpKind::kTurnSubmit>({{"parentNodeId", nullptr}})->parent_node_id, std::nullopt);
  EXPECT_EQ(decode<OpKind::kTurnSubmit>({{"parentNodeId", "n1"}})->parent_node_id, "n1");
  EXPECT_EQ(decode<OpKind::kTurnSubmit>({{"parentNodeId", ""}})->parent_node_id, "");
  EXPECT_EQ(code_of(decode<OpKind::kTurnSubmit>({{"parentNodeId", 3}}).error()), codes::kInvalidArgument);
}

TEST(OpParamsTest, ASteerNamesItsTurnAndAttachesNodesOrRuns) {
  auto steer = decode<OpKind::kTurnSteer>(
      {{"expectedTurnId", "u"}, {"input", "x"}, {"attachments", {{{"nodeId", "n"}}, {{"runId", "r"}}}}});
  ASSERT_TRUE(steer) << steer.error().to_string();
  EXPECT_EQ(steer->expected_turn_id, "u");
  EXPECT_EQ(steer->attachments.size(), 2u);
  EXPECT_EQ(decode<OpKind::kTurnSteer>({{"expectedTurnId", "u"}})->attachments, json::array());
  EXPECT_EQ(code_of(decode<OpKind::kTurnSteer>({{"input", "x"}}).error()), codes::kInvalidArgument);
  EXPECT_EQ(code_of(decode<OpKind::kTurnSteer>({{"expectedTurnId", ""}}).error()), codes::kInvalidArgument);
  for (const json& bad : {json("n"), json::array({json{{"nodeId", "n"}, {"runId", "r"}}}),
                          json::array({json{{"nodeId", 5}}}), json::array({json::object()})}) {
    EXPECT_EQ(code_of(decode<OpKind::kTurnSteer>({{"expectedTurnId", "u"}, {"attachments", bad}}).error()),
              codes::kInvalidArgument)
        << bad.dump();
    EXPECT_EQ(code_of(decode<OpKind::kTurnInput>({{"attachments", bad}}).error()), codes::kInvalidArgument)
        << bad.dump();
  }
}

TEST(OpParamsTest, AnInterruptOrAResumeMayNameItsTurnOrRun) {
  EXPECT_EQ(decode<OpKind::kTurnInterrupt>(json::object())->turn_id, std::nullopt);
  EXPECT_EQ(decode<OpKind::kTurnInterrupt>({{"turnId", "u"}})->turn_id, "u");
  EXPECT_EQ(code_of(decode<OpKind::kTurnInterrupt>({{"turnId", 5}}).error()), codes::kInvalidArgument);
  EXPECT_EQ(decode<OpKind::kRunResume>({{"runId", "r"}})->run_id, "r");
  EXPECT_EQ(code_of(decode<OpKind::kRunResume>({{"runId", true}}).error()), codes::kInvalidArgument);
}

TEST(OpParamsTest, ATakeoverNamesItsTarget) {
  EXPECT_EQ(decode<OpKind::kTakeoverStart>({{"threadId", "t"}, {"target", "browser"}})->target, "browser");
  EXPECT_EQ(decode<OpKind::kTakeoverEnd>({{"target", "browser"}})->target, "browser");
  EXPECT_EQ(code_of(decode<OpKind::kTakeoverStart>({{"threadId", "t"}}).error()), codes::kInvalidArgument);
  EXPECT_EQ(code_of(decode<OpKind::kTakeoverEnd>({{"target", ""}}).error()), codes::kInvalidArgument);
  EXPECT_EQ(code_of(decode<OpKind::kTakeoverStart>({{"target", 1}}).error()), codes::kInvalidArgument);
}

TEST(OpParamsTest, AResolutionIsOneOfTheThree) {
  auto retry = decode<OpKind::kRunResolveUncertain>({{"resolution", "retry"}, {"runId", "r"}});
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->resolution, UncertainResolution::kRetry);
  EXPECT_EQ(retry->run_id, "r");
  EXPECT_EQ(to_string(decode<OpKind::kRunResolveUncertain>({{"resolution", "mark_done"}})->resolution),
            "mark_done");
  EXPECT_EQ(to_string(decode<OpKind::kRunResolveUncertain>({{"resolution", "fail"}})->resolution), "fail");
  for (const json& bad : {json("maybe"), json(1), json()}) {
    EXPECT_EQ(code_of(decode<OpKind::kRunResolveUncertain>({{"resolution", bad}}).error()),
              codes::kInvalidArgument)
        << bad.dump();
  }
  EXPECT_EQ(code_of(decode<OpKind::kRunResolveUncertain>({{"resolution", "fail"}, {"runId", 3}}).error()),
            codes::kInvalidArgument);
}

TEST(OpParamsTest, AnApprovalResponseDecidesOneOfTheOffers) {
  auto accepted = decode<OpKind::kApprovalResponse>(
      {{"approvalId", "a"}, {"decision", "acceptForSite"}, {"remember", "turn"}, {"reason", "fine"}});
  ASSERT_TRUE(accepted) << accepted.error().to_string();
  EXPECT_EQ(accepted->approval_id, "a");
  EXPECT_EQ(accepted->decision, "acceptForSite");
  EXPECT_EQ(accepted->remember, "turn");
  EXPECT_EQ(accepted->reason, "fine");
  EXPECT_EQ(decode<OpKind::kApprovalResponse>({{"approvalId", "a"}, {"decision", "decline"}, {"reason", ""}})
                ->reason,
            std::nullopt)
      << "an empty reason is none";
  const json bad_ones[] = {
      {{"decision", "accept"}},
      {{"approvalId", "a"}},
      {{"approvalId", "a"}, {"decision", "maybe"}},
      {{"approvalId", "a"}, {"decision", "accept"}, {"remember", "turn"}},
      {{"approvalId", "a"}, {"decision", "acceptForSite"}, {"remember", "forever"}},
      {{"approvalId", "a"}, {"decision", "decline"}, {"reason", 5}},
      {{"approvalId", "a"}, {"decision", "decline"}, {"reason", std::string(5000, 'x')}},
  };
  for (const json& bad : bad_ones) {
    EXPECT_EQ(code_of(decode<OpKind::kApprovalResponse>(bad).error()), codes::kInvalidArgument) << bad.dump();
  }
}

TEST(OpParamsTest, AnInteractionResponseNeedsAnAnswer) {
  auto answer =
      decode<OpKind::kInteractionResponse>({{"interactionId", "i"}, {"response", {{"text", "yes"}}}});
  ASSERT_TRUE(answer) << answer.error().to_string();
  EXPECT_EQ(answer->response, (json{{"text", "yes"}}));
  EXPECT_EQ(code_of(decode<OpKind::kInteractionResponse>({{"interactionId", "i"}}).error()),
            codes::kInvalidArgument);
  EXPECT_EQ(
      code_of(decode<OpKind::kInteractionResponse>({{"interactionId", "i"}, {"response", nullptr}}).error()),
      codes::kInvalidArgument)
      << "null is absent";
  EXPECT_EQ(code_of(decode<OpKind::kInteractionResponse>({{"response", "x"}}).error()),
            codes::kInvalidArgument);
}

TEST(OpParamsTest, APolicyChangeIsHandedOnWhole) {
  const json params = {{"threadId", "t"}, {"mode", "read_only"}, {"extra", 1}};
  EXPECT_EQ(decode<OpKind::kPolicySetMode>(params)->change, params) << "the gatekeeper judges every field";
  EXPECT_EQ(decode<OpKind::kPolicyAddRule>(params)->change, params);
  EXPECT_TRUE(decode<OpKind::kPolicyRead>(json::object()));
}

}  // namespace
}  // namespace keel::protocol
