// keel/model_catalog.h — the models an engine may run turns with, by name (issue 18: the model picker).
//
// A ModelCatalog is a plain, immutable list of models, each with the name a thread chooses it by (the
// configuration's name), the settings a run freezes into its environment snapshot, the transport recovery
// compares, and the Provider that talks to it; plus the name of the default model, which threads that chose
// none use. An embedder that runs one model does not need one: EngineCore builds a one-model catalogue from
// EngineOptions::model, EngineOptions::transport and EngineDeps::provider when EngineDeps::models is null.
//
// What a catalogue lists is public (model.list reports it to every client): names, ids, capabilities and
// prices, never a credential (the transport holds only the credential's reference and shape).
//
// Thread-safety: const after construction; any thread may read it. The providers must outlive it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/engine_options.h"
#include "keel/provider.h"

namespace keel {

struct CatalogModel {
  std::string name;           // what thread.setModel names and a run's snapshot records
  std::string provider_name;  // the configured provider's name (model.list's `provider`); may be empty
  ModelSettings settings;     // settings.model is the id sent to the provider
  ProviderTransport transport;
  bool reasoning = false;        // the model reasons before it answers (model.list reports it)
  Provider* provider = nullptr;  // not owned; never null in a catalogue
};

class ModelCatalog {
 public:
  // `default_name` must name one of `models` when any is given; entries with an empty name, a null provider
  // or a name already taken are dropped (the first of a name wins), and an unknown default falls back to the
  // first entry.
  ModelCatalog(std::vector<CatalogModel> models, std::string default_name);

  // The model called `name`; nullptr when none is.
  const CatalogModel* find(std::string_view name) const;
  // The model a thread without a choice uses; nullptr only for an empty catalogue.
  const CatalogModel* default_model() const;
  // `name` when it is listed, the default model when `name` is empty or absent; nullptr when a non-empty
  // `name` is not listed (the thread chose a model that is no longer configured).
  const CatalogModel* resolve(const std::optional<std::string>& name) const;
  // Whether any model takes images (an input with one can then be accepted before its model is known).
  bool any_vision() const;
  const std::vector<CatalogModel>& models() const { return models_; }

 private:
  std::vector<CatalogModel> models_;
  size_t default_index_ = 0;
};

}  // namespace keel
