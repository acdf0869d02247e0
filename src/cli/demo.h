// cli/demo.h — `keel demo`: the main job. A real agent task end to end (docs/cli.md, *keel demo*).
#pragma once

#include <string>

#include "cli/commands.h"

namespace keel::cli {

struct DemoOptions {
  std::string model;  // "" = the scripted model server with the shipped script
  std::string dir;    // "" = a new folder
  bool json = false;
};

int demo_command(const CommandContext& context, const DemoOptions& options);

}  // namespace keel::cli
