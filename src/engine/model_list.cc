#include "engine/model_list.h"

namespace keel {

using nlohmann::json;

namespace {

json price_of(const std::optional<ModelPrice>& price) {
  if (!price || (price->input_per_million == 0 && price->output_per_million == 0)) return nullptr;
  json out = {{"inputPerMillion", price->input_per_million}, {"outputPerMillion", price->output_per_million}};
  if (price->cached_input_per_million) out["cachedInputPerMillion"] = *price->cached_input_per_million;
  if (price->reasoning_output_per_million)
    out["reasoningOutputPerMillion"] = *price->reasoning_output_per_million;
  return out;
}

}  // namespace

json model_list_view(const ModelCatalog& models) {
  json list = json::array();
  for (const CatalogModel& model : models.models()) {
    json entry = {
        {"name", model.name},
        {"provider", model.provider_name},
        {"modelId", model.settings.model},
        {"contextWindow", model.settings.context_window_tokens},
        {"maxOutputTokens",
         model.settings.max_output_tokens ? json(*model.settings.max_output_tokens) : json(nullptr)},
        {"vision", model.settings.vision},
        {"tools", model.settings.tool_use},
        {"reasoning", model.reasoning}};
    if (json price = price_of(model.settings.price); !price.is_null()) entry["price"] = std::move(price);
    list.push_back(std::move(entry));
  }
  const CatalogModel* fallback = models.default_model();
  return {{"models", std::move(list)}, {"defaultModel", fallback ? json(fallback->name) : json(nullptr)}};
}

}  // namespace keel
