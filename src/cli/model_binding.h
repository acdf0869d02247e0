// cli/model_binding.h — a configured model made ready for the engine: the HttpProvider that talks to it, the
// engine's ModelSettings, and the ProviderTransport a run's environment snapshot records (spec §5).
//
// The provider reads the model's API key through the CredentialResolver for every request, so a key rotated
// behind the same reference (a new value in the credentials table or the environment variable) is used by
// the next request without a restart, and recovery sees no drift. The transport keeps only the reference
// ("openai-main", "env:ANTHROPIC_API_KEY") and the credential's shape, never the secret.
#pragma once

#include <memory>
#include <string_view>

#include "config/config.h"
#include "config/credential_resolver.h"
#include "engine/engine_core.h"
#include "keel/clock.h"
#include "keel/scheduler.h"
#include "providers/http/http_client.h"
#include "providers/http_provider/http_provider.h"

namespace keel::cli {

struct ModelBinding {
  std::unique_ptr<providers::HttpProvider> provider;
  ModelSettings settings;
  ProviderTransport transport;
  providers::ModelPrice price;
};

// What a binding's provider uses; all must outlive it.
struct ModelBindingDeps {
  const config::CredentialResolver* credentials = nullptr;
  providers::HttpClient* client = nullptr;
  Scheduler* scheduler = nullptr;
  const Clock* clock = nullptr;
};

// Binds `model_name` (a key of config.models; "" = config.default_model). Errors: config.missing_reference
// (no such model, or none configured), and the resolver's errors for the credential's shape.
Result<ModelBinding> bind_model(const config::Config& config, std::string_view model_name,
                                ModelBindingDeps deps);

providers::WireFormat wire_format_of(config::ProviderKind kind);

}  // namespace keel::cli
