#include "store/approval_answer.h"

#include "keel/error_codes.h"

namespace keel {

using nlohmann::json;

namespace {

constexpr char kDecision[] = "decision";
constexpr char kRemember[] = "remember";
constexpr char kReason[] = "reason";

Error damaged(std::string_view what, const std::string& why) {
  return Error(codes::kStoreDecode, std::string(what) + " is damaged: " + why);
}

Result<std::optional<std::string>> optional_string(const json& value, const char* key,
                                                   std::string_view what) {
  const auto it = value.find(key);
  if (it == value.end()) return std::optional<std::string>();
  if (!it->is_string()) return std::unexpected(damaged(what, std::string("'") + key + "' is not a string"));
  return std::optional<std::string>(it->get<std::string>());
}

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
  if (!value.is_object()) return std::unexpected(damaged(what, "not a JSON object"));
  for (const auto& [key, unused] : value.items()) {
    if (key != kDecision && key != kRemember && key != kReason) {
      return std::unexpected(damaged(what, "unknown key '" + key + "'"));
    }
  }
  const auto decision = value.find(kDecision);
  if (decision == value.end() || !decision->is_string()) {
    return std::unexpected(damaged(what, "'decision' is not a string"));
  }
  auto choice = parse_approval_choice(decision->get<std::string>());
  if (!choice) return std::unexpected(damaged(what, choice.error().message()));
  ApprovalAnswer answer;
  answer.choice = *choice;
  answer.remember = KEEL_TRY(optional_string(value, kRemember, what));
  answer.reason = KEEL_TRY(optional_string(value, kReason, what));
  return answer;
}

}  // namespace keel
