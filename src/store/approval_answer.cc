#include "store/approval_answer.h"

#include "keel/error_codes.h"
#include "store/stored_json.h"

namespace keel {

using nlohmann::json;
using stored_json::damaged;

namespace {

constexpr char kDecision[] = "decision";
constexpr char kRemember[] = "remember";
constexpr char kReason[] = "reason";

}  // namespace

std::string_view to_string(ApprovalChoice choice) {
  switch (choice) {
    case ApprovalChoice::kAccept:
      return "accept";
    case ApprovalChoice::kAcceptForSite:
      return "acceptForSite";
    case ApprovalChoice::kDecline:
      return "decline";
  }
  return "decline";
}

Result<ApprovalChoice> parse_approval_choice(std::string_view text) {
  for (ApprovalChoice choice :
       {ApprovalChoice::kAccept, ApprovalChoice::kAcceptForSite, ApprovalChoice::kDecline}) {
    if (to_string(choice) == text) return choice;
  }
  return fail(codes::kStoreDecode, "unknown approval decision '" + std::string(text) + "' in the store");
}

json encode_approval_answer(const ApprovalAnswer& answer) {
  json out = {{kDecision, to_string(answer.choice)}};
  if (answer.remember) out[kRemember] = *answer.remember;
  if (answer.reason) out[kReason] = *answer.reason;
  return out;
}

Result<ApprovalAnswer> decode_approval_answer(const json& value, std::string_view what) {
  KEEL_TRY(stored_json::expect_object_with_keys(value, {kDecision, kRemember, kReason}, what));
  const auto decision = value.find(kDecision);
  if (decision == value.end() || !decision->is_string()) {
    return std::unexpected(damaged(what, "'decision' is not a string"));
  }
  auto choice = parse_approval_choice(decision->get<std::string>());
  if (!choice) return std::unexpected(damaged(what, choice.error().message()));
  ApprovalAnswer answer;
  answer.choice = *choice;
  answer.remember = KEEL_TRY(stored_json::optional_string_field(value, kRemember, what));
  answer.reason = KEEL_TRY(stored_json::optional_string_field(value, kReason, what));
  return answer;
}

}  // namespace keel
