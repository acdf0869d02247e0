// fuzz_json_tape — JsonTape against nlohmann::json on arbitrary bytes: both accept the same texts and read
// the same values. Three known differences are allowed: the tape refuses nesting deeper than 128; it accepts
// numbers too large for a double, which nlohmann refuses (the tape reads them only on demand); and nlohmann
// takes a NUL byte for the end of the text, where the tape refuses it.
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "providers/wire/json_tape.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  keel::providers::JsonTape tape;
  auto ours = tape.parse(text);
  // nlohmann stops reading at a NUL byte (end of a C string); a NUL is never valid JSON (outside a string it
  // is not whitespace, inside one it is a control character), so the tape must refuse it.
  if (text.find('\0') != std::string_view::npos) {
    keel::fuzz::require(!ours, "the tape accepted a NUL byte");
    return 0;
  }
  nlohmann::json theirs;
  bool accepted = true;
  bool number_overflow = false;
  try {
    theirs = nlohmann::json::parse(text);
  } catch (const nlohmann::json::out_of_range&) {
    accepted = false;
    number_overflow = true;
  } catch (const nlohmann::json::exception&) {
    accepted = false;
  }
  if (!ours) {
    const bool too_deep = ours.error().message().find("nested deeper") != std::string::npos;
    keel::fuzz::require(!accepted || too_deep, "the tape refused what nlohmann accepts");
    return 0;
  }
  keel::fuzz::require(accepted || number_overflow, "the tape accepted what nlohmann refuses");
  if (accepted) keel::fuzz::require(ours->to_json() == theirs, "the tape read another value");
  return 0;
}
