// cli/model_binding.h — a configured model made ready for the engine: the HttpProvider that talks to it, the
// engine's ModelSettings, and the ProviderTransport a run's environment snapshot records (spec §5).
//
// The provider reads the model's API key through the CredentialResolver for every request, so a key rotated
// behind the same reference (a new value in the credentials table or the environment variable) is used by
// the next request without a restart, and recovery sees no drift. The transport keeps only the reference
// ("openai-main", "env:ANTHROPIC_API_KEY") and the credential's shape, never the secret.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/credential_resolver.h"
#include "engine/engine_core.h"
#include "keel/clock.h"
#include "keel/model_catalog.h"
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

// A binding with the configuration's names, for the engine's model catalogue.
struct NamedBinding {
  std::string name;           // the key of config.models
  std::string provider_name;  // the key of config.providers
  bool reasoning = false;
  ModelBinding binding;
};

// Every configured model bound (the model picker's catalogue), in the configuration's order. Binding does
// not read a secret (a key is read per request), so it is cheap; a model that cannot be bound (its provider
// is not configured, a stored credential's shape cannot be read) is left out and its error is in `skipped`,
// so one broken model does not stop the others. Errors: only the default model's (`default_name`, as
// bind_model()).
struct BoundModels {
  std::vector<NamedBinding> models;
  std::vector<Error> skipped;
};
Result<BoundModels> bind_models(const config::Config& config, const std::string& default_name,
                                ModelBindingDeps deps);

// The catalogue of `bound` with `default_name` as its default; it points at the bindings' providers, so
// `bound` must outlive it.
ModelCatalog catalog_of(const BoundModels& bound, const std::string& default_name);

providers::WireFormat wire_format_of(config::ProviderKind kind);

}  // namespace keel::cli
