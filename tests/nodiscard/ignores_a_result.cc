// Compiled, never linked, by nodiscard_test.cmake: with KEEL_PROBE_<WAY> defined, one way of ignoring a
// failure that include/keel/error.h's [[nodiscard]] must turn into a compile error (-Werror=unused-result);
// with none defined, the same calls with their results used, which must compile.
#include "keel/error.h"

namespace {

keel::Result<int> parse_port() { return 8080; }
keel::Result<void> save() { return keel::fail("store.busy", "the database is locked", true); }
keel::Error refusal() { return keel::Error("command.rejected", "no"); }

}  // namespace

keel::Result<void> probe() {
#if defined(KEEL_PROBE_RESULT)
  parse_port();
#elif defined(KEEL_PROBE_RESULT_VOID)
  save();
#elif defined(KEEL_PROBE_ERROR)
  refusal();
#elif defined(KEEL_PROBE_FAIL)
  keel::fail("store.busy", "forgot the return");
#else
  if (!parse_port()) return keel::fail(refusal());
  KEEL_TRY(save());
#endif
  return {};
}
