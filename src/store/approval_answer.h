// store/approval_answer.h — a person's answer to an approval (ApprovalRecord.decision) as a typed value,
// and its one encoder and decoder for the `approvals.decision` column (docs/store.md).
//
// Stored as {decision: accept | acceptForSite | decline, remember?: text, reason?: text}, exactly what
// earlier versions wrote. Decoding is strict: anything else (not an object, an unknown decision, a
// mistyped or unknown key) is a damaged value, store.decode_failed; so what decodes encodes back to the
// same JSON. Which `remember` lifetimes exist is the policy's to say (policy/site_rule.h): the store keeps
// the text.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "keel/error.h"

namespace keel {

enum class ApprovalChoice { kAccept, kAcceptForSite, kDecline };
std::string_view to_string(ApprovalChoice choice);  // accept | acceptForSite | decline
// store.decode_failed for any other text (a caller validating a client's input reports its own error).
Result<ApprovalChoice> parse_approval_choice(std::string_view text);

struct ApprovalAnswer {
  ApprovalChoice choice = ApprovalChoice::kDecline;
  // acceptForSite: how long the remembered rule holds (turn | session | untilRevoked).
  std::optional<std::string> remember = std::nullopt;
  std::optional<std::string> reason = std::nullopt;  // what the person said, when anything
  bool accepts() const { return choice != ApprovalChoice::kDecline; }
  bool operator==(const ApprovalAnswer&) const = default;
};

nlohmann::json encode_approval_answer(const ApprovalAnswer& answer);
// store.decode_failed (naming `what`, e.g. "decision of approval X") for anything but the stored shape.
Result<ApprovalAnswer> decode_approval_answer(const nlohmann::json& value, std::string_view what);

}  // namespace keel
