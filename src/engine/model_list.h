// engine/model_list.h — model.list's result (docs/protocol.md): the engine's model catalogue as clients see
// it, to offer a choice of model per thread.
//
// Only what a person needs to choose: names, provider names, model ids, capabilities and prices. Never a
// credential, its reference or the provider's address. Pure; any thread.
#pragma once

#include <nlohmann/json.hpp>

#include "keel/model_catalog.h"

namespace keel {

// {models: [{name, provider, modelId, contextWindow, maxOutputTokens, vision, tools, reasoning, price?}],
// defaultModel}, in the catalogue's order; `price` (US dollars per million tokens: inputPerMillion,
// outputPerMillion, cachedInputPerMillion?, reasoningOutputPerMillion?) only for a model with a price.
nlohmann::json model_list_view(const ModelCatalog& models);

}  // namespace keel
