// The thread tree as the transcript shows it (docs/protocol.md, Branches): where the branches of
// thread.branches leave the selected one, as "‹ 2 / 3 ›" switchers, and which node an edited message's new
// turn goes under (turn.submit's parentNodeId). Pure functions of what keel sent.
import type { ResultThreadBranches } from "../../clients/ts/protocol";
import type { NodeView } from "./store";

export interface BranchEntry {
  leafNodeId: string;
  /** the last node shared with the selected branch; null: the selected branch, or one with a root of its own */
  forkNodeId: string | null;
  /** the branch's first node the selected branch does not hold; null for the selected branch */
  firstNodeId: string | null;
  firstNodeCreatedAt: number | null;
}

/** The alternatives at one place of the selected branch: which one is shown and the leaves of its neighbours. */
export interface BranchSwitch {
  /** the fork node ("" for the root): a stable key while switching */
  at: string;
  /** 0-based position of the selected branch among the alternatives, oldest first */
  index: number;
  count: number;
  previousLeaf: string | null;
  nextLeaf: string | null;
}

/** thread.branches' entries, read defensively (a stand-in may answer `{}`). */
export function branchEntries(listed: Partial<ResultThreadBranches> | null): BranchEntry[] {
  if (listed === null || !Array.isArray(listed.branches)) return [];
  return listed.branches.map((b) => ({
    leafNodeId: b.leafNodeId,
    forkNodeId: b.forkNodeId ?? null,
    firstNodeId: b.firstNodeId ?? null,
    firstNodeCreatedAt: b.firstNodeCreatedAt ?? null,
  }));
}

interface Alternative {
  firstNodeId: string;
  createdAt: number;
  /** the leaf to select for it; null for the selected branch's own */
  leaf: string | null;
}

/**
 * The switchers of the selected branch (`nodes`, root first), keyed by the id of the node the transcript
 * shows each one with: the first user message after the fork node (else the node right after it).
 * Alternatives at a node are its ways onward: the selected branch's next node and each distinct
 * firstNodeId of the branches that leave there (the newest leaf of each is the one selected), ordered by
 * when their first node was made.
 */
export function branchSwitches(nodes: NodeView[], branches: BranchEntry[]): Map<string, BranchSwitch> {
  const position = new Map<string, number>();
  nodes.forEach((n, i) => position.set(n.id, i));
  const byFork = new Map<string, Alternative[]>();
  for (const b of branches) {
    if (b.firstNodeId === null) continue; // the selected branch
    const at = b.forkNodeId ?? "";
    if (at !== "" && !position.has(at)) continue; // not on the branch this page shows (a stale list)
    const alternatives = byFork.get(at) ?? [];
    // Newest leaf first in thread.branches: the first leaf seen for a way onward is the one to select.
    if (!alternatives.some((a) => a.firstNodeId === b.firstNodeId)) {
      alternatives.push({ firstNodeId: b.firstNodeId, createdAt: b.firstNodeCreatedAt ?? Infinity, leaf: b.leafNodeId });
    }
    byFork.set(at, alternatives);
  }
  const switches = new Map<string, BranchSwitch>();
  for (const [at, others] of byFork) {
    const after = at === "" ? 0 : (position.get(at) ?? 0) + 1;
    const own = nodes[after];
    if (own === undefined) continue;
    const alternatives = [...others, { firstNodeId: own.id, createdAt: own.createdAt ?? Infinity, leaf: null }];
    alternatives.sort((a, b) => a.createdAt - b.createdAt || (a.firstNodeId < b.firstNodeId ? -1 : a.firstNodeId > b.firstNodeId ? 1 : 0));
    const index = alternatives.findIndex((a) => a.leaf === null);
    let shownOn = own.id;
    for (let i = after; i < nodes.length; i++) {
      if (nodes[i]!.kind === "user_message") {
        shownOn = nodes[i]!.id;
        break;
      }
    }
    switches.set(shownOn, {
      at,
      index,
      count: alternatives.length,
      previousLeaf: alternatives[index - 1]?.leaf ?? null,
      nextLeaf: alternatives[index + 1]?.leaf ?? null,
    });
  }
  return switches;
}

/**
 * parentNodeId for a new turn that replaces the user message nodes[index]: the node before its turn
 * (before the turn_context that starts it), "" when the turn is the first (an empty history).
 */
export function editParent(nodes: NodeView[], index: number): string {
  let before = index - 1;
  if (nodes[before]?.kind === "turn_context") before -= 1;
  return nodes[before]?.id ?? "";
}
