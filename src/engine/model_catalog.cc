// engine/model_catalog.cc — see keel/model_catalog.h.
#include "keel/model_catalog.h"

#include <algorithm>

namespace keel {

ModelCatalog::ModelCatalog(std::vector<CatalogModel> models, std::string default_name) {
  for (CatalogModel& model : models) {
    if (model.name.empty() || model.provider == nullptr || find(model.name) != nullptr) continue;
    models_.push_back(std::move(model));
  }
  for (size_t i = 0; i < models_.size(); ++i) {
    if (models_[i].name == default_name) default_index_ = i;
  }
}

const CatalogModel* ModelCatalog::find(std::string_view name) const {
  auto it = std::ranges::find(models_, name, &CatalogModel::name);
  return it == models_.end() ? nullptr : &*it;
}

const CatalogModel* ModelCatalog::default_model() const {
  return models_.empty() ? nullptr : &models_[default_index_];
}

const CatalogModel* ModelCatalog::resolve(const std::optional<std::string>& name) const {
  if (!name || name->empty()) return default_model();
  return find(*name);
}

bool ModelCatalog::any_vision() const {
  return std::ranges::any_of(models_, [](const CatalogModel& model) { return model.settings.vision; });
}

}  // namespace keel
