#include "protocol/store_params.h"

#include <gtest/gtest.h>

#include "keel/error_codes.h"

namespace keel::protocol {
namespace {

using nlohmann::json;

TEST(StoreParamsTest, DecodesEachStoreCommandIntoItsStruct) {
  auto fork = decode_store_command(OpKind::kThreadFork, {{"threadId", "t"}, {"atNodeId", "n"}});
  ASSERT_TRUE(fork) << fork.error().to_string();
  const auto& params = std::get<ThreadForkParams>(*fork);
  EXPECT_EQ(params.thread_id, "t");
  EXPECT_EQ(params.at_node_id, "n");
  EXPECT_FALSE(params.title);
  EXPECT_EQ(kind_of(*fork), OpKind::kThreadFork);

  auto update = decode_store_command(
      OpKind::kQueueUpdate, {{"threadId", "t"}, {"itemId", "i"}, {"input", "x"}, {"expectedRevision", 3}});
  ASSERT_TRUE(update) << update.error().to_string();
  EXPECT_EQ(std::get<QueueUpdateParams>(*update).expected_revision, 3);
  EXPECT_EQ(std::get<QueueUpdateParams>(*update).input, "x");
  auto set_model = decode_store_command(OpKind::kThreadSetModel,
                                        {{"threadId", "t"}, {"model", "m"}, {"expectedRevision", 2}});
  ASSERT_TRUE(set_model) << set_model.error().to_string();
  EXPECT_EQ(std::get<ThreadSetModelParams>(*set_model).model, "m");
  EXPECT_EQ(std::get<ThreadSetModelParams>(*set_model).expected_revision, 2);
  for (const OpSpec& spec : all_ops()) {
    if (!spec.store_command) continue;
    const json full = {
        {"threadId", "t"}, {"itemId", "i"}, {"leafNodeId", "n"}, {"input", "x"}, {"model", "m"}};
    auto decoded = decode_store_command(spec.kind, full);
    ASSERT_TRUE(decoded) << spec.name << ": " << decoded.error().to_string();
    EXPECT_EQ(kind_of(*decoded), spec.kind) << spec.name;
  }
}

TEST(StoreParamsTest, NullOptionalIsAbsent) {
  auto create = decode_store_command(OpKind::kThreadCreate, {{"title", nullptr}});
  ASSERT_TRUE(create);
  EXPECT_FALSE(std::get<ThreadCreateParams>(*create).title);
}

TEST(StoreParamsTest, BadInputIsInvalidArgumentNamingTheMember) {
  auto missing = decode_store_command(OpKind::kThreadDelete, json::object());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), codes::kInvalidArgument);
  EXPECT_NE(missing.error().message().find("'threadId'"), std::string::npos);

  auto mistyped = decode_store_command(OpKind::kThreadSelectBranch,
                                       {{"threadId", "t"}, {"leafNodeId", "n"}, {"expectedRevision", "3"}});
  ASSERT_FALSE(mistyped);
  EXPECT_EQ(mistyped.error().code(), codes::kInvalidArgument);
  EXPECT_NE(mistyped.error().message().find("'expectedRevision'"), std::string::npos);

  auto no_input = decode_store_command(OpKind::kTurnEnqueue, {{"threadId", "t"}});
  ASSERT_FALSE(no_input);
  EXPECT_EQ(no_input.error().message(), "'input' is required");

  EXPECT_EQ(decode_store_command(OpKind::kThreadCreate, json::array()).error().code(),
            codes::kInvalidArgument);
  EXPECT_EQ(decode_store_command(OpKind::kTurnSubmit, json::object()).error().code(),
            codes::kInvalidArgument);
}

}  // namespace
}  // namespace keel::protocol
