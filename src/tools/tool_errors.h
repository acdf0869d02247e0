// tools/tool_errors.h — the stable error codes of the tools layer (registry and builtin tools).
//
// Pending a merge into keel/error_codes.h (which lists every code keel emits); until then they live here.
// The same rules apply: never rename or reuse a code, add new ones.
#pragma once

namespace keel::codes {

// registry
inline constexpr char kToolDuplicate[] = "tool.duplicate";
inline constexpr char kToolNotFound[] = "tool.not_found";

// builtin workspace file tools
inline constexpr char kWorkspacePathOutside[] = "workspace.path_outside";
inline constexpr char kWorkspaceNotFound[] = "workspace.not_found";
inline constexpr char kWorkspaceNotAFile[] = "workspace.not_a_file";
inline constexpr char kWorkspaceBinaryFile[] = "workspace.binary_file";
inline constexpr char kWorkspaceTooLarge[] = "workspace.too_large";
inline constexpr char kWorkspaceEditNoMatch[] = "workspace.edit_no_match";
inline constexpr char kWorkspaceEditAmbiguous[] = "workspace.edit_ambiguous";
inline constexpr char kWorkspaceIo[] = "workspace.io_error";

}  // namespace keel::codes
