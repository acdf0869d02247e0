// keel/interaction_kind.h — what a durable wait on the world is waiting for (spec §5).
//
// A tool that needs a person's answer or time to pass names one of these in its InteractionPlan
// (keel/tool.h); the store keeps it with the waiting interaction (src/store/records.h maps it to the stored
// names ask_user, elicitation and timer). An enum, not a string, so a tool cannot plan a kind the engine
// does not know how to wait for.
#pragma once

namespace keel {

enum class InteractionKind {
  kAskUser,      // a question for the person who runs the agent
  kElicitation,  // an MCP server's request for structured input
  kTimer,        // time to pass; InteractionPlan::due_in_ms says how much
};

}  // namespace keel
