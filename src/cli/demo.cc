#include "cli/demo.h"

#include <ostream>

namespace keel::cli {

// Placeholder until the scripted demo lands in this change.
int demo_command(const CommandContext& context, const DemoOptions&) {
  *context.err << "keel demo: not built yet\n";
  return kExitFailed;
}

}  // namespace keel::cli
