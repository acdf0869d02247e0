// tools/builtin/builtin_tools.cc — register_builtin_tools().
#include "tools/builtin/builtin_tools.h"

#include <memory>
#include <string>
#include <vector>

#include "tools/builtin/ask_user_tool.h"
#include "tools/builtin/timer_tool.h"
#include "tools/builtin/wait_tool.h"
#include "tools/builtin/workspace_read_tools.h"
#include "tools/builtin/workspace_write_tools.h"

namespace keel::builtin {

Result<void> register_builtin_tools(ToolRegistry& registry, const BuiltinToolsOptions& options) {
  std::vector<std::shared_ptr<AgentTool>> tools;
  if (options.workspace_root) {
    std::shared_ptr<const Workspace> workspace =
        KEEL_TRY(Workspace::open(*options.workspace_root, options.workspace_limits));
    tools.push_back(std::make_shared<ListFilesTool>(workspace));
    tools.push_back(std::make_shared<ReadFileTool>(workspace));
    tools.push_back(std::make_shared<SearchFilesTool>(workspace));
    tools.push_back(std::make_shared<WriteFileTool>(workspace));
    tools.push_back(std::make_shared<EditFileTool>(workspace));
  }
  if (options.scheduler != nullptr) tools.push_back(std::make_shared<WaitTool>(*options.scheduler));
  if (options.interactions) {
    tools.push_back(std::make_shared<AskUserTool>());
    tools.push_back(std::make_shared<TimerTool>());
  }

  std::vector<std::string> registered;
  for (auto& tool : tools) {
    auto descriptor = registry.register_tool(tool);
    if (!descriptor) {
      for (const std::string& name : registered)
        (void)registry.unregister_tool(name);  // absent only if someone else removed it
      return fail(descriptor.error());
    }
    registered.push_back((*descriptor)->name);
  }
  return {};
}

}  // namespace keel::builtin
