// cli/model_binding.cc — see model_binding.h.
#include "cli/model_binding.h"

#include <optional>
#include <random>

#include "config/config_errors.h"

namespace keel::cli {

providers::WireFormat wire_format_of(config::ProviderKind kind) {
  switch (kind) {
    case config::ProviderKind::kOpenAiChat:
      return providers::WireFormat::kOpenAiChat;
    case config::ProviderKind::kOpenAiResponses:
      return providers::WireFormat::kOpenAiResponses;
    case config::ProviderKind::kAnthropic:
      return providers::WireFormat::kAnthropicMessages;
  }
  return providers::WireFormat::kOpenAiChat;
}

Result<ModelBinding> bind_model(const config::Config& config, std::string_view model_name,
                                ModelBindingDeps deps) {
  const std::string name(model_name.empty() ? std::string_view(config.default_model) : model_name);
  if (name.empty()) return fail(codes::kConfigMissingReference, "no model is configured (set default_model)");
  const config::ModelConfig* model = config.model(name);
  if (model == nullptr) return fail(codes::kConfigMissingReference, "no model '" + name + "' is configured");
  const config::ProviderConfig* provider = config.provider(model->provider);
  if (provider == nullptr) {
    return fail(codes::kConfigMissingReference,
                "model '" + name + "' names provider '" + model->provider + "', which is not configured");
  }
  nlohmann::json shape = KEEL_TRY(deps.credentials->shape_of(*provider));

  ModelBinding binding;
  binding.price = model->price;
  binding.settings.model = model->model_id;
  binding.settings.tool_use = model->capabilities.tool_use;
  binding.settings.vision = model->capabilities.vision;
  binding.settings.max_output_tokens = model->capabilities.max_output_tokens;
  binding.settings.context_window_tokens = model->capabilities.context_window_tokens;
  binding.settings.price = model->price;
  const providers::WireFormat format = wire_format_of(provider->kind);
  binding.transport.kind = std::string(config::to_string(provider->kind));
  binding.transport.base_url = provider->base_url;
  binding.transport.wire_format = std::string(providers::to_string(format));
  binding.transport.credential_id = provider->credential.reference();
  binding.transport.credential_shape = shape.is_null() ? "" : shape.dump();

  providers::HttpProviderOptions options;
  options.name = model->provider;
  options.format = format;
  options.base_url = provider->base_url;
  options.capabilities = model->capabilities;
  for (const auto& [header, value] : provider->headers) options.extra_headers.push_back({header, value});
  options.connect_timeout = std::chrono::milliseconds(provider->connect_timeout_ms);
  options.idle_timeout = std::chrono::milliseconds(provider->idle_timeout_ms);
  options.retry.max_attempts = static_cast<int>(provider->max_retries) + 1;
  options.codec.chat_stop_with_tool_calls_is_tool_use = provider->stop_with_tool_calls_is_tool_use;
  if (provider->credential.source != config::CredentialRef::Source::kNone) {
    options.api_key = [resolver = deps.credentials, ref = provider->credential]() -> Result<std::string> {
      auto secret = KEEL_TRY(resolver->resolve(ref));
      if (!secret) return fail(codes::kConfigMissingReference, "no credential behind " + ref.reference());
      return std::string(secret->reveal());
    };
  }
  binding.provider = std::make_unique<providers::HttpProvider>(
      std::move(options), *deps.client, *deps.scheduler, *deps.clock,
      providers::RetryPolicy::seeded_random(std::random_device{}()));
  return binding;
}

Result<BoundModels> bind_models(const config::Config& config, const std::string& default_name,
                                ModelBindingDeps deps) {
  BoundModels bound;
  // The default first: its failure is the caller's (no engine without it).
  // Optional so that it is visibly moved from once (the configuration names each model once).
  std::optional<ModelBinding> first = KEEL_TRY(bind_model(config, default_name, deps));
  for (const auto& [name, model] : config.models) {
    NamedBinding named{.name = name,
                       .provider_name = model.provider,
                       .reasoning = model.capabilities.reasoning,
                       .binding = {}};
    if (name == default_name && first) {
      named.binding = std::move(*first);
      first.reset();
    } else if (auto binding = bind_model(config, name, deps)) {
      named.binding = std::move(*binding);
    } else {
      bound.skipped.push_back(binding.error());
      continue;
    }
    bound.models.push_back(std::move(named));
  }
  return bound;
}

ModelCatalog catalog_of(const BoundModels& bound, const std::string& default_name) {
  std::vector<CatalogModel> models;
  for (const NamedBinding& named : bound.models) {
    models.push_back(CatalogModel{.name = named.name,
                                  .provider_name = named.provider_name,
                                  .settings = named.binding.settings,
                                  .transport = named.binding.transport,
                                  .reasoning = named.reasoning,
                                  .provider = named.binding.provider.get()});
  }
  return ModelCatalog(std::move(models), default_name);
}

}  // namespace keel::cli
