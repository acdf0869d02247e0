// store/stored_json.h — reading a JSON value the store wrote, which a damaged file may have changed.
//
// Typed columns that hold JSON (store/pending_tool.h, store/approval_answer.h) decode through these, so every
// damaged value gets the same error: store.decode, naming what was being read and what is wrong with it. The
// decoders refuse keys they do not know rather than ignore them: a value the store did not write is damage,
// not a newer format (docs/store.md, "Typed columns").
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "keel/error.h"

namespace keel::stored_json {

// store.decode: "<what> is damaged: <why>".
Error damaged(std::string_view what, std::string_view why);

// `value` is an object whose keys are all in `known`.
Result<void> expect_object_with_keys(const nlohmann::json& value,
                                     std::initializer_list<std::string_view> known, std::string_view what);

// value[key], which must be present and a string.
Result<std::string> string_field(const nlohmann::json& value, const char* key, std::string_view what);

// value[key] if present, which must then be a string.
Result<std::optional<std::string>> optional_string_field(const nlohmann::json& value, const char* key,
                                                         std::string_view what);

}  // namespace keel::stored_json
