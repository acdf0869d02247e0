#include "browser/profile_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "browser/browser_errors.h"
#include "testing/temp_dir.h"

namespace keel::browser {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

TEST(SingletonLock, ParsesHostAndPidWithDashesInTheHostName) {
  EXPECT_EQ(parse_singleton_lock("build-box-7-4242"), (SingletonLockOwner{"build-box-7", 4242}));
  EXPECT_EQ(parse_singleton_lock("host-1"), (SingletonLockOwner{"host", 1}));
}

TEST(SingletonLock, RefusesWhatIsNotHostDashPid) {
  for (const char* target : {"", "host", "host-", "-12", "host-12x", "host-0", "host-99999999999999"}) {
    EXPECT_FALSE(parse_singleton_lock(target)) << target;
  }
}

TEST(SingletonLock, AChromiumOfTheProfileIsRecognizedByItsUserDataDir) {
  const std::string cmdline =
      "/usr/lib/chromium/chromium\0--headless\0--user-data-dir=/data/browser/profile\0"s;
  EXPECT_TRUE(chromium_of_profile(cmdline, "/data/browser/profile"));
  EXPECT_TRUE(chromium_of_profile(cmdline, "/data/browser/./profile/"));
  EXPECT_FALSE(chromium_of_profile(cmdline, "/data/browser/other"));
  EXPECT_FALSE(chromium_of_profile("/usr/bin/sleep\0--user-data-dir=/data/browser/profile\0"s,
                                   "/data/browser/profile"));
  EXPECT_FALSE(chromium_of_profile("/usr/lib/chromium/chromium\0--headless\0"s, "/data/browser/profile"));
  EXPECT_FALSE(chromium_of_profile("", "/data/browser/profile"));
}

TEST(ClaimProfile, AProfileWithoutALockOrWithAStaleOneIsFree) {
  testing::TempDir dir;
  EXPECT_TRUE(claim_profile(dir.path(), std::chrono::milliseconds(100)));
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  // pid_max is at most 4194304: this pid cannot be alive.
  fs::create_symlink(std::string(host) + "-2147483000", dir.path() / "SingletonLock");
  EXPECT_TRUE(claim_profile(dir.path(), std::chrono::milliseconds(100)));
}

TEST(ClaimProfile, AProfileHeldByAProcessThatIsNotItsChromiumIsRefusedAndNothingKilled) {
  testing::TempDir dir;
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  // This test's own process holds the lock: alive, and not a Chromium of the profile.
  fs::create_symlink(std::string(host) + "-" + std::to_string(::getpid()), dir.path() / "SingletonLock");
  Result<void> claimed = claim_profile(dir.path(), std::chrono::milliseconds(100));
  ASSERT_FALSE(claimed);
  EXPECT_EQ(claimed.error().code(), codes::kBrowserLaunchFailed);
  EXPECT_NE(claimed.error().message().find("in use"), std::string::npos) << claimed.error().message();
}

TEST(ClaimProfile, AProfileLockedOnAnotherHostIsRefused) {
  testing::TempDir dir;
  fs::create_symlink("some-other-host.example-" + std::to_string(::getpid()), dir.path() / "SingletonLock");
  Result<void> claimed = claim_profile(dir.path(), std::chrono::milliseconds(100));
  ASSERT_FALSE(claimed);
  EXPECT_NE(claimed.error().message().find("some-other-host.example"), std::string::npos)
      << claimed.error().message();
}

}  // namespace
}  // namespace keel::browser
