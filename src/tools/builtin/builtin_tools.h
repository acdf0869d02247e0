// tools/builtin/builtin_tools.h — registering keel's builtin tools (level builtin, local binding).
//
// Each family is registered only when its dependency is given:
//   workspace_root -> list_files, read_file, search_files, write_file, edit_file (confined to that folder)
//   scheduler      -> wait
//   interactions   -> ask_user, set_timer (durable interactions the engine keeps, keel/tool.h)
#pragma once

#include <filesystem>
#include <optional>

#include "keel/error.h"
#include "keel/scheduler.h"
#include "keel/tool_registry.h"
#include "tools/builtin/ask_user_tool.h"
#include "tools/builtin/workspace.h"

namespace keel::builtin {

struct BuiltinToolsOptions {
  std::optional<std::filesystem::path> workspace_root = std::nullopt;
  WorkspaceLimits workspace_limits = {};
  Scheduler* scheduler = nullptr;  // must outlive the registered wait tool's calls
  bool interactions = false;
};

// All or nothing: on an error (a workspace root that does not exist, a name already registered) the
// tools this call registered are unregistered again and the error is returned.
Result<void> register_builtin_tools(ToolRegistry& registry, const BuiltinToolsOptions& options);

}  // namespace keel::builtin
