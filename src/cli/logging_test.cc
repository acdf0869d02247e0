#include "cli/logging.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/file_modes.h"
#include "testing/temp_dir.h"

namespace keel::cli {
namespace {

using testing::read_all;

// A client's id or an error message that quotes outside text must not reach a terminal reading the log as
// control sequences, nor start a log line of its own.
void log_hostile_message(const LogOptions& options) {
  auto logger = make_logger(options);
  ASSERT_TRUE(logger) << logger.error().to_string();
  (*logger)->info("turn.submit from {} refused",
                  "\x1b]0;pwned\x07\x1b[2J\nINFO approval: accepted \xe2\x80\xae");
  (*logger)->flush();
}

TEST(LoggingTest, TextLogLinesShowControlSequencesAndNewlinesInMessages) {
  testing::TempDir dir;
  const std::string path = dir.file("keel.log");
  log_hostile_message({.level = config::LogLevel::kInfo, .format = config::LogFormat::kText, .file = path});
  const std::string log = read_all(path);
  EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
  EXPECT_EQ(log.find('\x07'), std::string::npos) << log;
  EXPECT_EQ(log.find("\xe2\x80\xae"), std::string::npos) << log;
  EXPECT_NE(log.find("^[]0;pwned^G^[[2J^JINFO approval: accepted <U+202E> refused\n"), std::string::npos)
      << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
}

TEST(LoggingTest, JsonLogLinesCarryTheMessageMadeSafe) {
  testing::TempDir dir;
  const std::string path = dir.file("keel.log");
  log_hostile_message({.level = config::LogLevel::kInfo, .format = config::LogFormat::kJson, .file = path});
  const std::string log = read_all(path);
  EXPECT_EQ(log.find("\xe2\x80\xae"), std::string::npos) << log;
  const auto line = nlohmann::json::parse(log);
  EXPECT_EQ(line["msg"], "turn.submit from ^[]0;pwned^G^[[2J^JINFO approval: accepted <U+202E> refused");
}

// A log file keel creates is its owner's alone whatever the umask: it quotes clients, tools and errors.
TEST(LoggingTest, ALogFileKeelCreatesIsPrivateUnderUmask022) {
  testing::TempDir dir;
  const std::string path = dir.file("keel.log");
  Result<std::shared_ptr<spdlog::logger>> logger = [&] {
    const testing::UmaskScope umask(022);
    return make_logger({.level = config::LogLevel::kInfo, .format = config::LogFormat::kText, .file = path});
  }();
  ASSERT_TRUE(logger) << logger.error().to_string();
  (*logger)->info("started");
  (*logger)->flush();
  EXPECT_EQ(testing::mode_of(path), 0600u);
}

}  // namespace
}  // namespace keel::cli
