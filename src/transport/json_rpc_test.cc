// The JSON-RPC mapping on its own: requests to calls, bad input to the right JSON-RPC error, answers and
// events to responses and notifications.
#include "transport/json_rpc.h"

#include <gtest/gtest.h>

#include <string>

#include "transport/rpc_params.h"

namespace keel::rpc {
namespace {

using nlohmann::json;

json only_error(const Incoming& incoming) {
  EXPECT_EQ(incoming.entries.size(), 1u);
  const json* error = std::get_if<json>(&incoming.entries.at(0));
  EXPECT_NE(error, nullptr);
  return error ? *error : json();
}

const Call& only_call(const Incoming& incoming) {
  EXPECT_EQ(incoming.entries.size(), 1u);
  return std::get<Call>(incoming.entries.at(0));
}

TEST(JsonRpcTest, RequestBecomesCallWithoutIdentityParams) {
  Incoming in = parse_message(
      R"({"jsonrpc":"2.0","id":7,"method":"turn.submit","params":{"clientId":"c","submissionId":"s",
          "threadId":"t","input":"hi"}})",
      {});
  const Call& call = only_call(in);
  EXPECT_EQ(call.id, 7);
  EXPECT_FALSE(call.notification);
  EXPECT_EQ(call.method, "turn.submit");
  EXPECT_EQ(call.client_id, "c");
  EXPECT_EQ(call.submission_id, "s");
  EXPECT_EQ(call.params, (json{{"threadId", "t"}, {"input", "hi"}}));
  Op op = to_op(call, "ws:owner", "fallback");
  EXPECT_EQ(op.client_id, "ws:owner/c");
  EXPECT_EQ(op.submission_id, "s");
}

TEST(JsonRpcTest, ClientIdDefaultsToThePrincipalAndIdServesNonReceiptedOps) {
  Incoming in = parse_message(R"({"jsonrpc":"2.0","id":"a","method":"thread.list"})", {});
  Op op = to_op(only_call(in), "ws:owner", "rpc:conn-1:1");
  EXPECT_EQ(op.client_id, "ws:owner");
  EXPECT_EQ(op.submission_id, "rpc:conn-1:1");
}

// Issue 15, point 10: a clientId in the params was the op's identity, so naming another client's id reached
// its receipts. It now only names a client inside the connection's principal.
TEST(JsonRpcTest, ClientIdIsBoundToTheConnectionsPrincipal) {
  for (const char* claim : {"ws:owner", "ws-1", "stdio-1", "ws:owner/x", "../ws:owner"}) {
    Incoming in = parse_message(json{{"jsonrpc", "2.0"},
                                     {"id", 1},
                                     {"method", "thread.create"},
                                     {"params", {{"clientId", claim}, {"submissionId", "s"}}}}
                                    .dump(),
                                {});
    Op op = to_op(only_call(in), "ws:bob", "unused");
    EXPECT_EQ(op.client_id, std::string("ws:bob/") + claim);
    EXPECT_NE(op.client_id, claim);
  }
  EXPECT_EQ(bound_client_id("stdio-1", std::nullopt), "stdio-1");
}

TEST(JsonRpcTest, ReceiptedOpWithoutSubmissionIdIsInvalidParams) {
  const json& error =
      only_error(parse_message(R"({"jsonrpc":"2.0","id":1,"method":"thread.create","params":{}})", {}));
  EXPECT_EQ(error["error"]["code"], kInvalidParams);
  EXPECT_EQ(error["error"]["data"]["code"], "rpc.invalid_params");
  EXPECT_EQ(error["id"], 1);
}

TEST(JsonRpcTest, NotJsonIsParseError) {
  const json error = only_error(parse_message("{not json", {}));
  EXPECT_EQ(error["error"]["code"], kParseError);
  EXPECT_TRUE(error["id"].is_null());
  EXPECT_EQ(error["error"]["data"]["code"], "rpc.parse_error");
}

TEST(JsonRpcTest, InvalidUtf8IsParseError) {
  const std::string text =
      std::string(R"({"jsonrpc":"2.0","id":1,"method":"thread.list","params":{"x":")") + "\xff\xfe" + "\"}}";
  EXPECT_EQ(only_error(parse_message(text, {}))["error"]["code"], kParseError);
}

TEST(JsonRpcTest, InvalidRequestsAreRefused) {
  for (const char* text :
       {R"(42)", R"({"id":1,"method":"thread.list"})", R"({"jsonrpc":"1.0","id":1,"method":"thread.list"})",
        R"({"jsonrpc":"2.0","id":{"a":1},"method":"thread.list"})",
        R"({"jsonrpc":"2.0","id":[1],"method":"thread.list"})",
        R"({"jsonrpc":"2.0","id":true,"method":"thread.list"})", R"({"jsonrpc":"2.0","id":1,"method":5})",
        R"([])"}) {
    EXPECT_EQ(only_error(parse_message(text, {}))["error"]["code"], kInvalidRequest) << text;
  }
}

TEST(JsonRpcTest, UnknownMethodIsMethodNotFoundWithItsId) {
  const json error = only_error(parse_message(R"({"jsonrpc":"2.0","id":"x","method":"turn.explode"})", {}));
  EXPECT_EQ(error["error"]["code"], kMethodNotFound);
  EXPECT_EQ(error["id"], "x");
}

TEST(JsonRpcTest, WrongParameterTypesAreInvalidParams) {
  for (
      const char* text :
      {R"({"jsonrpc":"2.0","id":1,"method":"turn.submit","params":{"submissionId":"s","threadId":5,"input":"x"}})",
       R"({"jsonrpc":"2.0","id":1,"method":"turn.submit","params":{"submissionId":"s","input":"x"}})",
       R"({"jsonrpc":"2.0","id":1,"method":"turn.submit","params":{"submissionId":"s","threadId":"t","input":"x","budgetTokens":"many"}})",
       R"({"jsonrpc":"2.0","id":1,"method":"thread.list","params":[1,2]})",
       R"({"jsonrpc":"2.0","id":1,"method":"thread.list","params":{"clientId":3}})",
       R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"subscribe":"yes"}})"}) {
    EXPECT_EQ(only_error(parse_message(text, {}))["error"]["code"], kInvalidParams) << text;
  }
}

TEST(JsonRpcTest, NullOptionalParameterIsAbsentBeforeTheEngineSeesIt) {
  // Issue 14, point 2: these aborted the server (the engine read the null as a bool or a string).
  const Incoming init_in =
      parse_message(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"subscribe":null}})", {});
  const Call& init = only_call(init_in);
  EXPECT_EQ(init.params, json::object());
  const Incoming interrupt_in = parse_message(
      R"({"jsonrpc":"2.0","id":2,"method":"turn.interrupt","params":{"threadId":"t","turnId":null}})", {});
  const Call& interrupt = only_call(interrupt_in);
  EXPECT_EQ(interrupt.params, (json{{"threadId", "t"}}));
  const Incoming resume_in = parse_message(
      R"({"jsonrpc":"2.0","id":3,"method":"run.resume","params":{"threadId":"t","runId":null,"clientId":null}})",
      {});
  const Call& resume = only_call(resume_in);
  EXPECT_EQ(resume.params, (json{{"threadId", "t"}}));
  EXPECT_FALSE(resume.client_id.has_value());
  // A required parameter is not optional: null is the wrong type.
  EXPECT_EQ(only_error(parse_message(
                R"({"jsonrpc":"2.0","id":4,"method":"turn.interrupt","params":{"threadId":null}})",
                {}))["error"]["code"],
            kInvalidParams);
}

// Issue 14, point 11: every value is checked against the schema before the engine (and so before a receipt
// is written): a wrong enum value recorded under the submission id would refuse the corrected retry.
TEST(JsonRpcTest, EnumValuesBoundsAndShapesAreCheckedAgainstTheSchema) {
  for (
      const char* text :
      {R"({"jsonrpc":"2.0","id":1,"method":"approval.response","params":{"submissionId":"s","threadId":"t","approvalId":"a","decision":"Accept"}})",
       R"({"jsonrpc":"2.0","id":1,"method":"run.resolveUncertain","params":{"submissionId":"s","threadId":"t","resolution":"later"}})",
       R"({"jsonrpc":"2.0","id":1,"method":"policy.setMode","params":{"submissionId":"s","mode":"yolo"}})",
       R"({"jsonrpc":"2.0","id":1,"method":"policy.addRule","params":{"submissionId":"s","scope":"local:","decision":"always"}})",
       R"({"jsonrpc":"2.0","id":1,"method":"policy.addRule","params":{"submissionId":"s","scope":"local:","decision":"allow","effects":"rw"}})",
       R"({"jsonrpc":"2.0","id":1,"method":"turn.submit","params":{"submissionId":"s","threadId":"t","input":"x","budgetTokens":0}})",
       R"({"jsonrpc":"2.0","id":1,"method":"run.resume","params":{"threadId":"t","additionalBudgetTokens":-5}})",
       R"({"jsonrpc":"2.0","id":1,"method":"turn.steer","params":{"submissionId":"s","threadId":"t","expectedTurnId":"u","input":"x","attachments":[{"nodeId":5}]}})",
       R"({"jsonrpc":"2.0","id":1,"method":"turn.steer","params":{"submissionId":"s","threadId":"t","expectedTurnId":"u","input":"x","attachments":[{"nodeId":"n","runId":"r"}]}})",
       R"({"jsonrpc":"2.0","id":1,"method":"thread.create","params":{"submissionId":""}})",
       R"({"jsonrpc":"2.0","id":1,"method":"session.subscribe","params":{"threadIds":[1]}})"}) {
    const json error = only_error(parse_message(text, {}));
    EXPECT_EQ(error["error"]["code"], kInvalidParams) << text;
    EXPECT_EQ(error["error"]["data"]["code"], "rpc.invalid_params") << text;
  }
  const json error = only_error(parse_message(
      R"({"jsonrpc":"2.0","id":1,"method":"approval.response","params":{"submissionId":"s","threadId":"t","approvalId":"a","decision":"Accept"}})",
      {}));
  EXPECT_NE(error["error"]["message"].get<std::string>().find("/decision"), std::string::npos)
      << error.dump();
  const Incoming accepted_in = parse_message(
      R"({"jsonrpc":"2.0","id":1,"method":"approval.response","params":{"submissionId":"s","threadId":"t","approvalId":"a","decision":"accept"}})",
      {});
  const Call& accepted = only_call(accepted_in);
  EXPECT_EQ(accepted.params["decision"], "accept");
}

TEST(JsonRpcTest, MethodsAndReceiptsAreTheSchemasParamsDefinitions) {
  const std::vector<std::string> names = method_names();
  EXPECT_EQ(names.size(), 33u);  // thread.setMcpServers is the 33rd
  EXPECT_TRUE(is_receipted("thread.setMcpServers"));
  EXPECT_TRUE(is_receipted("thread.setModel"));
  EXPECT_FALSE(is_receipted("model.list"));
  for (const std::string& name : names) {
    EXPECT_TRUE(is_op_method(name) != is_session_method(name)) << name;
  }
  EXPECT_TRUE(is_receipted("turn.submit"));
  EXPECT_TRUE(is_receipted("approval.response"));
  EXPECT_FALSE(is_receipted("turn.interrupt"));
  EXPECT_TRUE(is_op_method("takeover.start"));
  EXPECT_FALSE(is_receipted("takeover.start"));
  EXPECT_FALSE(is_receipted("takeover.end"));
  EXPECT_FALSE(is_receipted("thread.list"));
  EXPECT_FALSE(is_op_method("turn.explode"));
}

// Issue 14, point 3: a 600 KB line of 100,000 nested objects killed the server (SIGSEGV).
TEST(JsonRpcTest, NestingDeeperThanTheBoundIsRefusedWithJsonTooDeep) {
  const size_t depth = 100000;
  std::string nested;
  for (size_t i = 0; i < depth; ++i) nested += "{\"a\":";
  nested += "1";
  nested += std::string(depth, '}');
  const std::string text =
      R"({"jsonrpc":"2.0","id":1,"method":"thread.create","params":{"submissionId":"s","title":"t","x":)" +
      nested + "}}";
  const json error = only_error(parse_message(text, {}));
  EXPECT_EQ(error["error"]["code"], kInvalidRequest);
  EXPECT_EQ(error["error"]["data"]["code"], "json.too_deep");
  EXPECT_EQ(error["error"]["data"]["maxDepth"], 128);
  // Just inside the bound is an ordinary request.
  std::string fits;
  for (int i = 0; i < 120; ++i) fits += "[";
  fits += std::string(120, ']');
  const Incoming call_in = parse_message(
      R"({"jsonrpc":"2.0","id":2,"method":"thread.create","params":{"submissionId":"s","x":)" + fits + "}}",
      {});
  const Call& call = only_call(call_in);
  EXPECT_TRUE(call.params.contains("x"));
}

TEST(JsonRpcTest, RepeatedKeyIsAParseError) {
  const json error = only_error(
      parse_message(R"({"jsonrpc":"2.0","id":1,"method":"thread.list","method":"thread.read"})", {}));
  EXPECT_EQ(error["error"]["code"], kParseError);
}

TEST(JsonRpcTest, OversizedMessageIsRefusedWithItsCode) {
  Limits limits;
  limits.max_message_bytes = 64;
  const json error = only_error(parse_message(std::string(65, ' '), limits));
  EXPECT_EQ(error["error"]["code"], kInvalidRequest);
  EXPECT_EQ(error["error"]["data"]["code"], "rpc.message_too_large");
}

TEST(JsonRpcTest, BatchHoldsEachEntryAndIsBounded) {
  Incoming in = parse_message(
      R"([{"jsonrpc":"2.0","id":1,"method":"thread.list"},{"jsonrpc":"2.0","method":"nope"},5])", {});
  ASSERT_TRUE(in.batch);
  ASSERT_EQ(in.entries.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<Call>(in.entries[0]));
  EXPECT_EQ(std::get<json>(in.entries[1])["error"]["code"], kMethodNotFound);
  EXPECT_EQ(std::get<json>(in.entries[2])["error"]["code"], kInvalidRequest);

  Limits limits;
  limits.max_batch = 2;
  const json error = only_error(parse_message(
      R"([{"jsonrpc":"2.0","method":"thread.list"},{"jsonrpc":"2.0","method":"thread.list"},
          {"jsonrpc":"2.0","method":"thread.list"}])",
      limits));
  EXPECT_EQ(error["error"]["data"]["code"], "rpc.batch_too_large");
}

TEST(JsonRpcTest, AckBecomesResultAndRejectionBecomesCodedError) {
  AgentEvent ack{"command.ack",
                 "t",
                 3,
                 {{"clientId", "c"},
                  {"submissionId", "s"},
                  {"method", "turn.submit"},
                  {"result", {{"turnId", "u"}}},
                  {"replayed", true}}};
  json response = answer_response(ack, 9);
  EXPECT_EQ(response,
            (json{{"jsonrpc", "2.0"}, {"id", 9}, {"result", {{"turnId", "u"}, {"replayed", true}}}}));

  AgentEvent rejected{"command.rejected",
                      "t",
                      4,
                      {{"clientId", "c"},
                       {"submissionId", "s"},
                       {"method", "turn.submit"},
                       {"error", {{"code", "turn.busy"}, {"message", "a turn runs"}}}}};
  response = answer_response(rejected, "r");
  EXPECT_EQ(response["id"], "r");
  EXPECT_EQ(response["error"]["code"], kCommandRejected);
  EXPECT_EQ(response["error"]["message"], "a turn runs");
  EXPECT_EQ(response["error"]["data"]["code"], "turn.busy");
  EXPECT_EQ(response["error"]["data"]["submissionId"], "s");
}

TEST(JsonRpcTest, EventBecomesNotification) {
  AgentEvent event{"turn.start", "t", 2, {{"turnId", "u"}}};
  EXPECT_EQ(
      event_notification(event),
      (json{{"jsonrpc", "2.0"},
            {"method", "event"},
            {"params",
             {{"type", "turn.start"}, {"threadId", "t"}, {"seq", 2}, {"payload", {{"turnId", "u"}}}}}}));
}

TEST(JsonRpcTest, DumpReplacesInvalidUtf8InsteadOfThrowing) {
  const std::string text = dump(json{{"text", std::string("a\xff")}});
  EXPECT_NE(text.find("a"), std::string::npos);
  EXPECT_TRUE(json::accept(text));
}

}  // namespace
}  // namespace keel::rpc
