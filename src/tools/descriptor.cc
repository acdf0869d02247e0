// tools/descriptor.cc — ToolSpec -> ToolDescriptor: validation, §4's defaults, catalog entry and digest.
//
// This is the only place that knows the defaults (spec §4); every other consumer reads the descriptor.
#include "tools/descriptor.h"

#include <string>
#include <utility>

#include "keel/error_codes.h"
#include "util/sha256.h"

namespace keel {

// ^[a-zA-Z0-9_-]{1,64}$, spelled out: names are checked on every registration and a std::regex buys nothing.
bool is_valid_tool_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string_view to_string(ToolLevel level) {
  switch (level) {
    case ToolLevel::kL0:
      return "L0";
    case ToolLevel::kL1:
      return "L1";
    case ToolLevel::kL2:
      return "L2";
    case ToolLevel::kMcp:
      return "mcp";
    case ToolLevel::kBuiltin:
      return "builtin";
  }
  return "unknown";
}

std::string_view to_string(ToolEffects effects) {
  switch (effects) {
    case ToolEffects::kRead:
      return "read";
    case ToolEffects::kWrite:
      return "write";
  }
  return "unknown";
}

std::string_view to_string(ToolRecovery recovery) {
  switch (recovery) {
    case ToolRecovery::kRetrySafe:
      return "retry-safe";
    case ToolRecovery::kInspectFirst:
      return "inspect-first";
    case ToolRecovery::kNeverRetry:
      return "never-retry";
  }
  return "unknown";
}

std::string_view to_string(ToolTrust trust) {
  switch (trust) {
    case ToolTrust::kTrusted:
      return "trusted";
    case ToolTrust::kUntrusted:
      return "untrusted";
  }
  return "unknown";
}

std::string_view to_string(ToolProvenance provenance) {
  switch (provenance) {
    case ToolProvenance::kTool:
      return "tool";
    case ToolProvenance::kMcp:
      return "mcp";
    case ToolProvenance::kPage:
      return "page";
    case ToolProvenance::kWorkspace:
      return "workspace";
  }
  return "unknown";
}

namespace {

std::string_view binding_kind_name(ToolBinding::Kind kind) {
  return kind == ToolBinding::Kind::kMcp ? "mcp" : "local";
}

bool blank(const std::string& text) { return text.find_first_not_of(" \t\r\n") == std::string::npos; }

// Parameters must describe an object: providers require it, and arguments arrive as an object. A schema
// without "type" gets "type":"object" so the descriptor (and its digest) always says it explicitly.
Result<nlohmann::json> normalize_parameters(const nlohmann::json& parameters) {
  if (!parameters.is_object()) {
    return fail(codes::kInvalidArgument,
                "parameters must be a JSON Schema object, got " + std::string(parameters.type_name()));
  }
  nlohmann::json normalized = parameters;
  const auto type = normalized.find("type");
  if (type == normalized.end()) {
    normalized["type"] = "object";
  } else if (!(type->is_string() && type->get_ref<const std::string&>() == "object")) {
    return fail(codes::kInvalidArgument,
                "parameters must have \"type\": \"object\", got \"type\": " +
                    type->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return normalized;
}

Result<void> check_binding(ToolLevel level, const ToolBinding& binding) {
  if (level == ToolLevel::kMcp) {
    if (binding.kind != ToolBinding::Kind::kMcp) {
      return fail(codes::kInvalidArgument, "an mcp-level tool must use an MCP binding");
    }
    if (binding.server.empty() || binding.endpoint.empty()) {
      return fail(codes::kInvalidArgument, "an MCP binding must name its server and endpoint");
    }
    return {};
  }
  if (binding.kind != ToolBinding::Kind::kLocal) {
    return fail(codes::kInvalidArgument, "a " + std::string(to_string(level)) +
                                             "-level tool must use a local binding, not an MCP binding");
  }
  // A local binding carries nothing; stray MCP fields would only make two equal tools digest differently.
  if (!binding.server.empty() || !binding.endpoint.empty() || !binding.auth_identity.empty()) {
    return fail(codes::kInvalidArgument, "a local binding must not name a server, endpoint or auth identity");
  }
  return {};
}

ToolRecovery default_recovery(ToolEffects effects) {
  return effects == ToolEffects::kRead ? ToolRecovery::kRetrySafe : ToolRecovery::kNeverRetry;
}

ToolTrust default_trust(ToolLevel level) {
  return level == ToolLevel::kBuiltin ? ToolTrust::kTrusted : ToolTrust::kUntrusted;
}

ToolProvenance default_provenance(ToolLevel level) {
  switch (level) {
    case ToolLevel::kBuiltin:
      return ToolProvenance::kTool;
    case ToolLevel::kMcp:
      return ToolProvenance::kMcp;
    case ToolLevel::kL0:
    case ToolLevel::kL1:
    case ToolLevel::kL2:
      return ToolProvenance::kPage;
  }
  return ToolProvenance::kPage;  // unreachable for valid enumerators; the untrusted choice is the safe one
}

Result<detail::CompiledToolSpec> compile_checked(const ToolSpec& spec) {
  if (!is_valid_tool_name(spec.name)) {
    return fail(codes::kInvalidArgument, "tool name must match ^[a-zA-Z0-9_-]{1,64}$");
  }
  if (blank(spec.label)) return fail(codes::kInvalidArgument, "label must not be empty");
  if (blank(spec.description)) return fail(codes::kInvalidArgument, "description must not be empty");
  KEEL_TRY(check_binding(spec.level, spec.binding));

  detail::CompiledToolSpec compiled;
  ToolDescriptor& d = compiled.descriptor;
  d.name = spec.name;
  d.label = spec.label;
  d.description = spec.description;
  d.parameters = KEEL_TRY(normalize_parameters(spec.parameters));
  d.level = spec.level;
  d.effects = spec.effects;
  d.recovery = spec.recovery.value_or(default_recovery(spec.effects));
  d.trust = spec.trust.value_or(default_trust(spec.level));
  d.provenance = spec.provenance.value_or(default_provenance(spec.level));
  d.binding = spec.binding;
  d.needs_vision = spec.needs_vision;

  compiled.validator = KEEL_TRY(compile_parameter_schema(d.parameters));

  nlohmann::json entry = d.catalog_entry();
  entry.erase("digest");
  auto digest = json_fingerprint(entry);
  if (!digest) {
    // Only a value canonical JSON refuses gets here (invalid UTF-8, a non-finite number, nesting too deep).
    return fail(codes::kInvalidArgument,
                "the tool cannot be described canonically: " + digest.error().to_string());
  }
  d.digest = std::move(*digest);
  return compiled;
}

}  // namespace

nlohmann::json ToolDescriptor::catalog_entry() const {
  nlohmann::json entry{
      {"name", name},
      {"label", label},
      {"description", description},
      {"parameters", parameters},
      {"level", to_string(level)},
      {"effects", to_string(effects)},
      {"recovery", to_string(recovery)},
      {"trust", to_string(trust)},
      {"provenance", to_string(provenance)},
      {"binding",
       {{"kind", binding_kind_name(binding.kind)},
        {"server", binding.server},
        {"endpoint", binding.endpoint},
        {"authIdentity", binding.auth_identity}}},
      {"digest", digest},
  };
  if (needs_vision) entry["needsVision"] = true;
  return entry;
}

ProviderTool ToolDescriptor::provider_tool() const { return ProviderTool{name, description, parameters}; }

std::string ToolDescriptor::summary() const {
  std::string text = "level=" + std::string(to_string(level)) +
                     " effects=" + std::string(to_string(effects)) +
                     " recovery=" + std::string(to_string(recovery)) + " binding=";
  if (binding.kind == ToolBinding::Kind::kMcp) {
    text += "mcp(server=" + binding.server + ", endpoint=" + binding.endpoint +
            ", auth=" + (binding.auth_identity.empty() ? "none" : binding.auth_identity) + ")";
  } else {
    text += "local";
  }
  return text;
}

namespace detail {

Result<CompiledToolSpec> compile_tool_spec(const ToolSpec& spec) {
  auto compiled = compile_checked(spec);
  if (!compiled) {
    // Name the tool so a failed registration among many is easy to find.
    return fail(compiled.error().with_context("tool \"" + spec.name + "\""));
  }
  return compiled;
}

}  // namespace detail

Result<ToolDescriptor> make_tool_descriptor(const ToolSpec& spec) {
  auto compiled = KEEL_TRY(detail::compile_tool_spec(spec));
  return std::move(compiled.descriptor);
}

}  // namespace keel
