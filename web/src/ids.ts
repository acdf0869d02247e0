// Submission ids: unique per op, so that a retry after a reconnect replays instead of repeating
// (docs/protocol.md, Principals: clients sharing a token share submission ids).
export function newSubmissionId(): string {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
