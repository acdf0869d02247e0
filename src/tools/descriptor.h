// tools/descriptor.h — internal: turning a ToolSpec into its frozen descriptor and compiled validator.
//
// make_tool_descriptor() (keel/tool_registry.h) and ToolRegistry::register_tool() share this, so a spec is
// validated, normalized and its schema compiled exactly once per registration.
#pragma once

#include <memory>

#include "keel/error.h"
#include "keel/tool.h"
#include "keel/tool_registry.h"

namespace keel::detail {

struct CompiledToolSpec {
  ToolDescriptor descriptor;
  std::shared_ptr<const ParameterValidator> validator;
};

// Every rule of keel/tool_registry.h's header comment; errors are invalid_argument naming the tool.
Result<CompiledToolSpec> compile_tool_spec(const ToolSpec& spec);

}  // namespace keel::detail
