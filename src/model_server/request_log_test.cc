#include "model_server/request_log.h"

#include <gtest/gtest.h>

#include <fstream>

#include "model_server/model_server_errors.h"
#include "testing/temp_dir.h"

namespace keel::model_server {
namespace {

TEST(RequestLogTest, RedactsCredentialHeadersButKeepsTheScheme) {
  const nlohmann::json record = request_record(1, "POST", "/v1/messages",
                                               {{"Authorization", "Bearer sk-live-123"},
                                                {"X-Api-Key", "sk-ant-456"},
                                                {"Content-Type", "application/json"}},
                                               R"({"stream":true})");
  EXPECT_EQ(record["headers"]["authorization"], "Bearer [redacted]");
  EXPECT_EQ(record["headers"]["x-api-key"], "[redacted]");
  EXPECT_EQ(record["headers"]["content-type"], "application/json");
  EXPECT_EQ(record["body"]["stream"], true);
  EXPECT_EQ(record.dump().find("sk-"), std::string::npos);
}

TEST(RequestLogTest, KeepsABodyThatIsNotJsonAsText) {
  const nlohmann::json record = request_record(2, "POST", "/v1/responses", {}, "not json");
  EXPECT_EQ(record["body_text"], "not json");
  EXPECT_FALSE(record.contains("body"));
}

TEST(RequestLogTest, AppendsJsonLinesToTheFile) {
  testing::TempDir dir;
  const std::string path = dir.file("requests.jsonl");
  auto log = RequestLog::open(path);
  ASSERT_TRUE(log) << log.error().to_string();
  (*log)->append(request_record(1, "POST", "/a", {}, "{}"));
  (*log)->append(request_record(2, "POST", "/b", {}, "{}"));
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> paths;
  while (std::getline(in, line)) paths.push_back(nlohmann::json::parse(line)["path"]);
  EXPECT_EQ(paths, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ((*log)->records().size(), 2u);
}

TEST(RequestLogTest, FailsWhenTheFileCannotBeOpened) {
  auto log = RequestLog::open("/nonexistent/keel/requests.jsonl");
  ASSERT_FALSE(log);
  EXPECT_EQ(log.error().code(), codes::kModelServerRecordFailed);
}

}  // namespace
}  // namespace keel::model_server
