// The app's state: what keel told this page, kept in signals, and the actions a person takes.
// It talks to keel only through a Transport. Resynchronisation (docs/protocol.md, Reconnecting): on every
// "open" it calls initialize{subscribe:true} first, so no event is missed, then re-reads the thread list and
// the open thread (thread.read + queue.list) and applies only the events with a seq above the read's lastSeq.
// Approvals, interactions and uncertain writes are not part of a read: they are applied by id whatever their
// seq (initialize re-sends the open ones with resent:true).
import { batch, signal, type Signal } from "@preact/signals";
import type {
  Event,
  EventApprovalRequest,
  EventInteractionRequest,
  EventItemComplete,
  EventItemDelta,
  EventItemStart,
  EventRunUncertain,
  EventRunUpdated,
  EventThreadUpdated,
  EventTokenUsage,
  EventTurnComplete,
  EventTurnStart,
  ResultInitialize,
  ResultModelList,
  ResultPolicyRead,
  ResultQueueList,
  ResultThreadBranches,
  ResultThreadFork,
  ResultThreadList,
  ResultThreadRead,
  ResultTurnInput,
} from "../../clients/ts/protocol";
import type { SessionCheck } from "./bootstrap";
import { branchEntries, type BranchEntry } from "./branches";
import { newSubmissionId } from "./ids";
import { RpcError, type StateChange, type Transport } from "./transport/transport";

export interface NodeView {
  id: string;
  kind: string;
  runId?: string | null;
  body: Record<string, unknown>;
  /** unix ms, from thread.read (item.complete's nodes have none) */
  createdAt?: number;
}

export interface ThreadEntry {
  threadId: string;
  title: string;
  parentThreadId: string | null;
  /** the model the thread chose (thread.setModel); null: keel's default model */
  model: string | null;
  updatedAt: number;
}

/** A model keel is configured with (model.list). */
export type ModelInfo = ResultModelList["models"][number];

export interface ToolProgress {
  text?: string;
  details?: unknown;
}

export interface StreamItem {
  itemId: string;
  kind: string;
  name?: string;
  toolCallId?: string;
  text: Signal<string>;
  reasoning: Signal<string>;
  progress: Signal<ToolProgress | null>;
}

export interface RunView {
  runId: string;
  turnId: string;
  state: string;
  revision: number;
  recovered?: boolean;
}

export interface QueueItem {
  itemId: string;
  position: number;
  input: unknown;
}

export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  cachedInputTokens?: number;
  reasoningTokens?: number;
  totalTokens?: number;
  costUsd?: number;
}

export interface Unfinished {
  threadId: string;
  runId: string;
  turnId: string;
  state: string;
  canContinue: boolean;
}

export type Mode = "ask_every_write" | "ask_writes" | "read_only" | "allow_all";
export const kModes: Mode[] = ["ask_every_write", "ask_writes", "read_only", "allow_all"];

const kActiveStates = new Set([
  "queued",
  "streaming_model",
  "executing_tool",
  "waiting_approval",
  "waiting_interaction",
]);

export function isActive(run: RunView | null): boolean {
  return run !== null && kActiveStates.has(run.state);
}

/** One open thread: its persisted branch, what streams now, its run and queue. */
export class ThreadView {
  readonly nodes = signal<NodeView[]>([]);
  readonly streaming = signal<StreamItem[]>([]);
  readonly run = signal<RunView | null>(null);
  readonly queue = signal<QueueItem[]>([]);
  readonly usage = signal<Record<string, Usage>>({});
  readonly loaded = signal(false);
  /** thread.branches: every leaf of the thread's tree, and where it leaves the selected branch */
  readonly branches = signal<BranchEntry[]>([]);
  /** the user message whose text is being edited, to send again as a new branch */
  readonly editing = signal<string | null>(null);
  /** a read is under way; another was asked for meanwhile (reads of one view never overlap) */
  reading = false;
  readAgain = false;
  lastSeq = -1;
  queueSeq = -1;
  /** events that arrived while a read was under way; applied after it (seq > lastSeq) */
  buffered: Event[] | null = null;
  private pendingText = new Map<string, { text: string; reasoning: string }>();
  private flushTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(readonly threadId: string) {}

  /** Deltas are gathered and shown every few frames: 500 a second must not make 500 renders. */
  addDelta(itemId: string, text: string, reasoning: string): void {
    const pending = this.pendingText.get(itemId) ?? { text: "", reasoning: "" };
    pending.text += text;
    pending.reasoning += reasoning;
    this.pendingText.set(itemId, pending);
    if (this.flushTimer === null) this.flushTimer = setTimeout(() => this.flush(), 40);
  }

  flush(): void {
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    const items = this.streaming.value;
    batch(() => {
      for (const [itemId, pending] of this.pendingText) {
        const item = items.find((i) => i.itemId === itemId);
        if (item === undefined) continue;
        if (pending.text !== "") item.text.value += pending.text;
        if (pending.reasoning !== "") item.reasoning.value += pending.reasoning;
      }
    });
    this.pendingText.clear();
  }

  dispose(): void {
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
  }
}

/** "refused": no connection ever opened; "expired": one did, keel answers again but no longer knows this
 * page's session (it restarted). */
export type ConnectionView = "connecting" | "open" | "reconnecting" | "refused" | "expired";

export class AppStore {
  readonly connection = signal<ConnectionView>("connecting");
  readonly threads = signal<ThreadEntry[]>([]);
  readonly current = signal<ThreadView | null>(null);
  readonly approvals = signal<EventApprovalRequest[]>([]);
  readonly interactions = signal<EventInteractionRequest[]>([]);
  readonly uncertain = signal<(EventRunUncertain & { threadId: string })[]>([]);
  readonly unfinished = signal<Unfinished[]>([]);
  readonly policy = signal<{ defaultMode: string; threadModes: Record<string, string> }>({
    defaultMode: "ask_writes",
    threadModes: {},
  });
  /** the configured models a thread may choose, and the one threads without a choice use */
  readonly models = signal<ModelInfo[]>([]);
  readonly defaultModel = signal<string | null>(null);
  /** the model picked while no thread is open: the thread the next message creates gets it */
  readonly newThreadModel = signal<string | null>(null);
  /** the last thing the app has to tell the person (a queued steer's reason, a refusal) */
  readonly status = signal<{ text: string; kind: "info" | "error" } | null>(null);
  readonly search = signal("");

  /** set when keel, reachable again, answered that it does not know the session cookie */
  private sessionUnknown = false;

  constructor(
    private readonly transport: Transport,
    private readonly checkSession?: () => Promise<SessionCheck>,
  ) {
    transport.onEvent((event) => this.onEvent(event));
    transport.onState((change) => this.onState(change));
  }

  start(): void {
    this.transport.connect();
  }

  // ---- connection and resynchronisation ----

  private onState(change: StateChange): void {
    if (change.state === "open") {
      this.sessionUnknown = false;
      this.connection.value = "open";
      void this.resync();
    } else if (change.state === "waiting" || change.state === "connecting") {
      this.connection.value = this.viewOf(change);
      if (change.state === "waiting" && change.everOpened && change.failures > 0) void this.recheckSession(change);
    }
  }

  private viewOf(change: StateChange): ConnectionView {
    if (!change.everOpened) return change.failures > 0 ? "refused" : "connecting";
    return this.sessionUnknown ? "expired" : "reconnecting";
  }

  /** A reconnect failed: keel is down (keep retrying quietly) or it restarted and forgot the session (say
   * how to get back in, and keep retrying: a new link opened in any tab renews the cookie for this one). */
  private async recheckSession(change: StateChange): Promise<void> {
    if (this.checkSession === undefined) return;
    const answer = await this.checkSession();
    if (this.transport.state === "open") return;
    this.sessionUnknown = answer === "unknown";
    this.connection.value = this.viewOf(change);
  }

  private async resync(): Promise<void> {
    try {
      const init = await this.transport.request<ResultInitialize>("initialize", { subscribe: true });
      this.unfinished.value = init.unfinished.map((u) => ({
        threadId: u.threadId,
        runId: u.runId,
        turnId: u.turnId,
        state: u.state,
        canContinue: u.canContinue,
      }));
      // Waits that ended while this page was away are gone: keep only what initialize lists.
      const approvalIds = new Set(init.unfinished.flatMap((u) => u.pendingApprovals ?? []));
      const interactionIds = new Set(
        init.unfinished.flatMap((u) => (u.pendingInteractions ?? []).map((i) => i.interactionId)),
      );
      this.approvals.value = this.approvals.value.filter((a) => approvalIds.has(a.approvalId));
      this.interactions.value = this.interactions.value.filter((i) => interactionIds.has(i.interactionId));
      // run.uncertain is sent when recovery pauses the run, before this page could be connected: a paused
      // run that initialize lists is offered the same choices, naming the call when its event was seen.
      const uncertainRuns = init.unfinished.filter((u) => u.state === "paused_uncertain");
      this.uncertain.value = uncertainRuns.map(
        (u) =>
          this.uncertain.value.find((known) => known.runId === u.runId) ?? {
            runId: u.runId,
            turnId: u.turnId,
            toolCallId: "",
            name: "a write",
            offers: ["retry", "mark_done", "fail"],
            threadId: u.threadId,
          },
      );
      await Promise.all([this.loadThreads(), this.loadPolicy(), this.loadModels()]);
      const open = this.current.value;
      if (open !== null) await this.readThread(open);
    } catch (error) {
      this.report(error);
    }
  }

  private async loadThreads(): Promise<void> {
    const list = await this.transport.request<ResultThreadList>("thread.list", {});
    const entries = list.threads as (ResultThreadList["threads"][number] & {
      parentThreadId?: string | null;
      updatedAt?: number;
    })[];
    this.threads.value = entries.map((t) => ({
      threadId: t.threadId,
      title: t.title ?? "",
      parentThreadId: t.parentThreadId ?? null,
      model: t.model ?? null,
      updatedAt: t.updatedAt ?? 0,
    }));
    const open = this.current.value;
    if (open !== null && !this.threads.value.some((t) => t.threadId === open.threadId)) await this.openThread(null);
  }

  private async loadModels(): Promise<void> {
    const list = await this.transport.request<Partial<ResultModelList>>("model.list", {});
    batch(() => {
      // Without models (a stand-in for keel that does not answer model.list) the picker is not shown.
      this.models.value = list.models ?? [];
      this.defaultModel.value = list.defaultModel ?? null;
    });
  }

  private async loadPolicy(): Promise<void> {
    const policy = await this.transport.request<ResultPolicyRead & { threadModes?: unknown }>("policy.read", {});
    const modes: Record<string, string> = {};
    if (typeof policy.threadModes === "object" && policy.threadModes !== null) {
      for (const [id, mode] of Object.entries(policy.threadModes)) {
        if (typeof mode === "string") modes[id] = mode;
      }
    }
    this.policy.value = { defaultMode: policy.defaultMode, threadModes: modes };
  }

  /** Reads the view's thread; asked again while a read is under way, it reads once more after that one (two
   * overlapping reads would share the buffer of held events). */
  private async readThread(view: ThreadView): Promise<void> {
    if (view.reading) {
      view.readAgain = true;
      return;
    }
    view.reading = true;
    try {
      do {
        view.readAgain = false;
        await this.readThreadOnce(view);
      } while (view.readAgain && this.current.value === view);
    } finally {
      view.reading = false;
    }
  }

  private async readThreadOnce(view: ThreadView): Promise<void> {
    view.buffered = [];
    try {
      const [read, queue, branches] = await Promise.all([
        this.transport.request<ResultThreadRead & { nodes: NodeView[]; latestRun?: unknown }>("thread.read", {
          threadId: view.threadId,
        }),
        this.transport.request<ResultQueueList>("queue.list", { threadId: view.threadId }),
        // The transcript is worth showing without its branch switchers.
        this.transport.request<ResultThreadBranches>("thread.branches", { threadId: view.threadId }).catch((error: unknown) => {
          this.report(error);
          return null;
        }),
      ]);
      if (this.current.value !== view) return;
      const latest = read.latestRun as { runId?: string; turnId?: string; state?: string; usage?: Usage } | null;
      batch(() => {
        view.nodes.value = (read.nodes as NodeView[]).map((n) => ({
          id: n.id,
          kind: n.kind,
          runId: n.runId ?? null,
          body: n.body ?? {},
          ...(typeof n.createdAt === "number" ? { createdAt: n.createdAt } : {}),
        }));
        view.branches.value = branchEntries(branches);
        // Every turn's usage and cost on this branch, as keel kept them (token.usage events update them live).
        const kept: Record<string, Usage> = {};
        for (const run of read.runs ?? []) kept[run.runId] = run.usage as Usage;
        view.usage.value = { ...view.usage.value, ...kept };
        if (view.editing.value !== null && !view.nodes.value.some((n) => n.id === view.editing.value)) view.editing.value = null;
        view.streaming.value = [];
        view.lastSeq = read.lastSeq;
        view.queueSeq = queue.lastSeq;
        view.queue.value = queue.items.map((i) => ({ itemId: i.itemId, position: i.position, input: i.input }));
        if (latest !== null && latest !== undefined && typeof latest.runId === "string") {
          view.run.value = { runId: latest.runId, turnId: latest.turnId ?? "", state: latest.state ?? "", revision: -1 };
          if (latest.usage !== undefined && latest.usage !== null) {
            view.usage.value = { ...view.usage.value, [latest.runId]: latest.usage };
          }
        } else {
          view.run.value = null;
        }
        view.loaded.value = true;
      });
      const later = view.buffered;
      view.buffered = null;
      for (const event of later) this.applyThreadEvent(view, event);
    } catch (error) {
      view.buffered = null;
      this.report(error);
    }
  }

  // ---- events ----

  private onEvent(event: Event): void {
    const p = event.payload as Record<string, unknown>;
    switch (event.type) {
      case "approval.request": {
        const request = p as unknown as EventApprovalRequest;
        if (!this.approvals.value.some((a) => a.approvalId === request.approvalId)) {
          this.approvals.value = [...this.approvals.value, request];
        }
        break;
      }
      case "approval.resolved":
        this.approvals.value = this.approvals.value.filter((a) => a.approvalId !== p["approvalId"]);
        break;
      case "interaction.request": {
        const request = p as unknown as EventInteractionRequest;
        if (!this.interactions.value.some((i) => i.interactionId === request.interactionId)) {
          this.interactions.value = [...this.interactions.value, request];
        }
        break;
      }
      case "interaction.resolved":
        this.interactions.value = this.interactions.value.filter((i) => i.interactionId !== p["interactionId"]);
        break;
      case "run.uncertain": {
        const u = { ...(p as unknown as EventRunUncertain), threadId: event.threadId };
        if (!this.uncertain.value.some((x) => x.runId === u.runId)) this.uncertain.value = [...this.uncertain.value, u];
        break;
      }
      case "thread.updated": {
        this.onThreadUpdated(event.threadId, p as unknown as EventThreadUpdated);
        // Another branch was selected or made (here or in another tab): the open thread is read again.
        const open = this.current.value;
        if (open !== null && open.threadId === event.threadId && typeof p["leafNodeId"] === "string") {
          void this.readThread(open);
        }
        break;
      }
      case "policy.updated":
        void this.loadPolicy().catch((error: unknown) => this.report(error));
        break;
      default:
        break;
    }
    if (event.type === "run.updated" || event.type === "turn.complete") this.onRunChanged(event);
    const view = this.current.value;
    if (view === null || view.threadId !== event.threadId) return;
    if (view.buffered !== null) {
      view.buffered.push(event);
      return;
    }
    this.applyThreadEvent(view, event);
  }

  /** A run that stopped waiting or ended drops its open prompts; unfinished follows the run's state. */
  private onRunChanged(event: Event): void {
    const p = event.payload as { runId?: string; state?: string };
    const runId = p.runId;
    if (runId === undefined) return;
    const state = event.type === "turn.complete" ? "ended" : (p.state ?? "");
    if (state !== "waiting_approval") this.approvals.value = this.approvals.value.filter((a) => a.runId !== runId);
    if (state !== "waiting_interaction") {
      this.interactions.value = this.interactions.value.filter((i) => i.runId !== runId);
    }
    if (state !== "paused_uncertain" && state !== "ended") {
      this.uncertain.value = this.uncertain.value.filter((u) => u.runId !== runId);
    }
    if (event.type === "run.updated") {
      const rest = this.unfinished.value.filter((u) => u.runId !== runId);
      const canContinue = state === "interrupted" || state === "budget_paused";
      if (kActiveStates.has(state) || canContinue || state === "paused_uncertain") {
        const old = this.unfinished.value.find((u) => u.runId === runId);
        rest.push({ threadId: event.threadId, runId, turnId: old?.turnId ?? "", state, canContinue });
      }
      this.unfinished.value = rest;
    }
  }

  private onThreadUpdated(threadId: string, p: EventThreadUpdated): void {
    const known = this.threads.value.some((t) => t.threadId === threadId);
    // Without a title the event reports a command (a fork, a branch, a delete from another tab): the list
    // is read again rather than guessed.
    if (!known || p.title === undefined) {
      void this.loadThreads().catch((error: unknown) => this.report(error));
      return;
    }
    this.threads.value = this.threads.value.map((t) =>
      t.threadId === threadId ? { ...t, title: p.title ?? t.title, updatedAt: Date.now() } : t,
    );
  }

  private applyThreadEvent(view: ThreadView, event: Event): void {
    const p = event.payload as Record<string, unknown>;
    if (event.type === "queue.updated") {
      if (event.seq <= view.queueSeq) return;
      const items = p["items"] as ResultQueueList["items"] | undefined;
      if (items !== undefined) {
        view.queue.value = items.map((i) => ({ itemId: i.itemId, position: i.position, input: i.input }));
      }
      if (p["held"] === true) {
        const error = p["error"] as { message?: string } | undefined;
        this.status.value = { text: "The queue is held: " + (error?.message ?? "the next input could not start"), kind: "error" };
      }
      return;
    }
    if (event.seq <= view.lastSeq) return;
    switch (event.type) {
      case "turn.start": {
        const s = p as unknown as EventTurnStart;
        view.run.value = { runId: s.runId, turnId: s.turnId, state: "streaming_model", revision: -1, recovered: s.recovered === true };
        break;
      }
      case "run.updated": {
        const u = p as unknown as EventRunUpdated;
        const run = view.run.value;
        if (run === null || run.runId !== u.runId) {
          view.run.value = { runId: u.runId, turnId: "", state: u.state, revision: u.revision };
        } else if (u.revision >= run.revision) {
          view.run.value = { ...run, state: u.state, revision: u.revision };
        }
        break;
      }
      case "turn.complete": {
        const c = p as unknown as EventTurnComplete;
        view.flush();
        view.streaming.value = [];
        void this.readBranches(view); // the turn grew its branch: the leaves changed
        if (c.stopReason === "error" && c.error !== undefined) {
          this.status.value = { text: `The turn failed: ${c.error.message} (${c.error.code})`, kind: "error" };
        }
        break;
      }
      case "item.start": {
        const s = p as unknown as EventItemStart;
        if (view.streaming.value.some((i) => i.itemId === s.itemId)) break;
        const item: StreamItem = {
          itemId: s.itemId,
          kind: s.kind,
          text: signal(""),
          reasoning: signal(""),
          progress: signal(null),
        };
        if (s.name !== undefined) item.name = s.name;
        if (s.toolCallId !== undefined) item.toolCallId = s.toolCallId;
        view.streaming.value = [...view.streaming.value, item];
        break;
      }
      case "item.delta": {
        const d = p as unknown as EventItemDelta;
        if (d.toolProgress !== undefined) {
          const item = view.streaming.value.find((i) => i.itemId === d.itemId);
          if (item !== undefined) item.progress.value = d.toolProgress as ToolProgress;
        } else {
          view.addDelta(d.itemId, d.text ?? "", d.reasoning ?? "");
        }
        break;
      }
      case "item.complete": {
        const c = p as unknown as EventItemComplete & { node: NodeView };
        view.flush();
        batch(() => {
          view.streaming.value = view.streaming.value.filter((i) => i.itemId !== c.itemId);
          if (!view.nodes.value.some((n) => n.id === c.node.id)) {
            view.nodes.value = [...view.nodes.value, { id: c.node.id, kind: c.node.kind, runId: view.run.value?.runId ?? null, body: c.node.body ?? {} }];
          }
        });
        break;
      }
      case "token.usage": {
        const u = p as unknown as EventTokenUsage;
        view.usage.value = { ...view.usage.value, [u.runId]: u.total as Usage };
        break;
      }
      default:
        break;
    }
  }

  // ---- actions ----

  report(error: unknown): void {
    const text = error instanceof RpcError ? `${error.message} (${error.code})` : String(error);
    this.status.value = { text, kind: "error" };
  }

  private command<T>(method: string, params: object): Promise<T> {
    return this.transport.request<T>(method, { ...params, submissionId: newSubmissionId() });
  }

  async openThread(threadId: string | null): Promise<void> {
    this.current.value?.dispose();
    if (threadId === null) {
      this.current.value = null;
      return;
    }
    const view = new ThreadView(threadId);
    this.current.value = view;
    this.status.value = null;
    if (this.transport.state === "open") await this.readThread(view);
  }

  async newThread(): Promise<void> {
    await this.openThread(null);
  }

  async deleteThread(threadId: string): Promise<void> {
    try {
      await this.command("thread.delete", { threadId });
      if (this.current.value?.threadId === threadId) await this.openThread(null);
      await this.loadThreads();
    } catch (error) {
      this.report(error);
    }
  }

  async fork(atNodeId: string): Promise<void> {
    const view = this.current.value;
    if (view === null) return;
    try {
      const parent = this.threads.value.find((t) => t.threadId === view.threadId);
      const title = `${parent?.title || "untitled"} (fork)`;
      const forked = await this.command<ResultThreadFork>("thread.fork", { threadId: view.threadId, atNodeId, title });
      await this.loadThreads();
      await this.openThread(forked.threadId);
    } catch (error) {
      this.report(error);
    }
  }

  private async readBranches(view: ThreadView): Promise<void> {
    try {
      const listed = await this.transport.request<ResultThreadBranches>("thread.branches", { threadId: view.threadId });
      if (this.current.value === view) view.branches.value = branchEntries(listed);
    } catch (error) {
      this.report(error);
    }
  }

  /** Shows another branch of the open thread (thread.updated then reads it again, in every tab). */
  async selectBranch(leafNodeId: string): Promise<void> {
    const view = this.current.value;
    if (view === null) return;
    try {
      await this.command("thread.selectBranch", { threadId: view.threadId, leafNodeId });
    } catch (error) {
      this.report(error);
    }
  }

  /** "Edit and resend": a new turn under `parentNodeId` ("" for an empty history), on a new branch. */
  async resendEdited(parentNodeId: string, text: string): Promise<boolean> {
    const view = this.current.value;
    if (view === null || text.trim() === "") return false;
    try {
      await this.command("turn.submit", { threadId: view.threadId, input: text, parentNodeId });
      view.editing.value = null;
      this.status.value = null;
      await this.readThread(view); // thread.updated does too; reads of one view do not overlap
      return true;
    } catch (error) {
      this.report(error);
      return false;
    }
  }

  /** Enter: turn.input starts a turn, steers the running one, or queues with the reason to show. */
  async send(text: string): Promise<boolean> {
    if (text.trim() === "") return false;
    try {
      let view = this.current.value;
      if (view === null) {
        const model = this.newThreadModel.value;
        const created = await this.command<{ threadId: string }>("thread.create", model === null ? {} : { model });
        this.newThreadModel.value = null;
        await this.loadThreads();
        await this.openThread(created.threadId);
        view = this.current.value;
        if (view === null) return false;
      }
      let result: ResultTurnInput;
      try {
        result = await this.command<ResultTurnInput>("turn.input", { threadId: view.threadId, input: text });
      } catch (error) {
        // It raced the turn's end: sent again (a new submission), it starts or queues (docs/protocol.md).
        if (!(error instanceof RpcError) || error.code !== "turn.ended") throw error;
        result = await this.command<ResultTurnInput>("turn.input", { threadId: view.threadId, input: text });
      }
      if (result.action === "enqueued") {
        this.status.value = { text: "Queued: " + (result.reason ?? "the turn could not take it"), kind: "info" };
      } else if (result.action === "steered") {
        this.status.value = { text: "Sent to the running turn (steer)", kind: "info" };
      } else {
        this.status.value = null;
      }
      return true;
    } catch (error) {
      this.report(error);
      return false;
    }
  }

  async enqueue(text: string): Promise<boolean> {
    const view = this.current.value;
    if (view === null || text.trim() === "") return false;
    try {
      await this.command("turn.enqueue", { threadId: view.threadId, input: text });
      this.status.value = { text: "Queued", kind: "info" };
      return true;
    } catch (error) {
      this.report(error);
      return false;
    }
  }

  async removeQueued(itemId: string): Promise<void> {
    const view = this.current.value;
    if (view === null) return;
    try {
      await this.command("queue.remove", { threadId: view.threadId, itemId });
    } catch (error) {
      this.report(error);
    }
  }

  async interrupt(): Promise<void> {
    const view = this.current.value;
    if (view === null) return;
    try {
      await this.transport.request("turn.interrupt", { threadId: view.threadId });
    } catch (error) {
      this.report(error);
    }
  }

  async resume(threadId: string, runId: string): Promise<void> {
    try {
      await this.command("run.resume", { threadId, runId });
      this.unfinished.value = this.unfinished.value.filter((u) => u.runId !== runId);
    } catch (error) {
      this.report(error);
    }
  }

  async answerApproval(
    approval: EventApprovalRequest,
    decision: "accept" | "acceptForSite" | "decline",
    remember?: string,
  ): Promise<void> {
    const params: Record<string, unknown> = { threadId: approval.threadId, approvalId: approval.approvalId, decision };
    if (decision === "acceptForSite" && remember !== undefined) params["remember"] = remember;
    try {
      await this.command("approval.response", params);
      this.approvals.value = this.approvals.value.filter((a) => a.approvalId !== approval.approvalId);
    } catch (error) {
      this.report(error);
    }
  }

  async answerInteraction(interaction: EventInteractionRequest, answer: string): Promise<void> {
    try {
      await this.command("interaction.response", {
        threadId: interaction.threadId,
        interactionId: interaction.interactionId,
        response: { answer },
      });
      this.interactions.value = this.interactions.value.filter((i) => i.interactionId !== interaction.interactionId);
    } catch (error) {
      this.report(error);
    }
  }

  async resolveUncertain(threadId: string, runId: string, resolution: "retry" | "mark_done" | "fail"): Promise<void> {
    try {
      await this.command("run.resolveUncertain", { threadId, runId, resolution });
      this.uncertain.value = this.uncertain.value.filter((u) => u.runId !== runId);
    } catch (error) {
      this.report(error);
    }
  }

  /** The model of the open thread's next turns (a running turn keeps its own), or of the thread the next
   * message creates when none is open. */
  async setModel(model: string): Promise<void> {
    const view = this.current.value;
    if (view === null) {
      this.newThreadModel.value = model;
      return;
    }
    try {
      await this.command("thread.setModel", { threadId: view.threadId, model });
      await this.loadThreads();
    } catch (error) {
      this.report(error);
    }
  }

  async setMode(threadId: string, mode: Mode): Promise<void> {
    try {
      await this.command("policy.setMode", { threadId, mode });
      await this.loadPolicy();
    } catch (error) {
      this.report(error);
    }
  }
}
