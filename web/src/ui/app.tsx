// The page: the thread list and tree on the side, the open thread in the middle with what waits for the
// person, the queue and the input box, which stays live while a turn runs.
import { useEffect, useRef, useState } from "preact/hooks";
import { textOf } from "../content";
import { isActive, kModes, type AppStore, type Mode, type ThreadEntry, type ThreadView } from "../store";
import { focusComposer, focusOrComposer, focusThreads, kComposerId } from "./focus";
import { Icon } from "./icons";
import { ModelPicker } from "./model_picker";
import { ApprovalCard, ContinueCard, InteractionCard, UncertainCard } from "./prompts";
import { Transcript } from "./transcript";

const kModeLabels: Record<Mode, string> = {
  ask_every_write: "Ask before every write",
  ask_writes: "Ask before writes",
  read_only: "Read only",
  allow_all: "Allow everything",
};

/** The thread list's keys (roving focus: Tab reaches one item, the arrows move between them). */
function moveInList(from: HTMLElement, key: string): boolean {
  const items = [...(from.closest("nav")?.querySelectorAll<HTMLElement>(".thread-open") ?? [])];
  const at = items.indexOf(from);
  const to = key === "ArrowDown" ? at + 1 : key === "ArrowUp" ? at - 1 : key === "Home" ? 0 : key === "End" ? items.length - 1 : -2;
  if (to === -2) return false;
  items[Math.max(0, Math.min(items.length - 1, to))]?.focus();
  return true;
}

function ThreadTree({ store }: { store: AppStore }) {
  const [confirming, setConfirming] = useState<string | null>(null);
  /** the item that last had the focus while `current` was open: Tab comes back to it (opening another
   * thread makes that thread's item the one) */
  const [focused, setFocused] = useState<{ threadId: string; current: string | null } | null>(null);
  /** the thread whose delete button gets the focus back (Esc on "Delete?") */
  const refocusDelete = useRef<string | null>(null);
  const query = store.search.value.trim().toLowerCase();
  const threads = store.threads.value;
  const currentId = store.current.value?.threadId ?? null;
  const waiting = new Set([...store.approvals.value.map((a) => a.threadId), ...store.interactions.value.map((i) => i.threadId)]);
  const paused = new Set(store.unfinished.value.filter((u) => u.canContinue).map((u) => u.threadId));
  const children = new Map<string | null, ThreadEntry[]>();
  const ids = new Set(threads.map((t) => t.threadId));
  for (const t of threads) {
    const parent = t.parentThreadId !== null && ids.has(t.parentThreadId) ? t.parentThreadId : null;
    const list = children.get(parent) ?? [];
    list.push(t);
    children.set(parent, list);
  }
  for (const list of children.values()) list.sort((a, b) => b.updatedAt - a.updatedAt);
  const matches = (t: ThreadEntry) => query === "" || (t.title || "untitled").toLowerCase().includes(query);
  // The items shown, in order (as render() below shows them: a thread that does not match stays when it has
  // forks).
  const visible: string[] = [];
  const collect = (parent: string | null): void => {
    for (const t of children.get(parent) ?? []) {
      if (!matches(t) && !children.has(t.threadId)) continue;
      visible.push(t.threadId);
      collect(t.threadId);
    }
  };
  collect(null);
  const lastFocused = focused !== null && focused.current === currentId ? focused.threadId : null;
  const roving = [lastFocused, currentId].find((id) => id !== null && visible.includes(id)) ?? visible[0] ?? null;
  const remove = async (threadId: string) => {
    const at = visible.indexOf(threadId);
    const neighbour = visible[at + 1] ?? visible[at - 1];
    await store.deleteThread(threadId);
    const item = neighbour === undefined ? null : document.querySelector(`.thread-open[data-thread-id="${CSS.escape(neighbour)}"]`);
    if (neighbour !== undefined) setFocused({ threadId: neighbour, current: store.current.value?.threadId ?? null });
    focusOrComposer(item);
  };
  const render = (parent: string | null): preact.JSX.Element | null => {
    const list = children.get(parent);
    if (list === undefined) return null;
    return (
      <ul>
        {list.map((t) => {
          const sub = render(t.threadId);
          if (!matches(t) && sub === null) return null;
          const title = t.title || "(untitled)";
          return (
            <li key={t.threadId}>
              <div class={t.threadId === currentId ? "thread current" : "thread"}>
                <button
                  type="button"
                  class="thread-open"
                  data-thread-id={t.threadId}
                  tabIndex={t.threadId === roving ? 0 : -1}
                  aria-current={t.threadId === currentId ? "true" : undefined}
                  onClick={() => void store.openThread(t.threadId)}
                  onFocus={() => setFocused({ threadId: t.threadId, current: currentId })}
                  onKeyDown={(e) => {
                    if (e.key === "Delete") {
                      e.preventDefault();
                      setConfirming(t.threadId);
                    } else if (moveInList(e.currentTarget, e.key)) {
                      e.preventDefault();
                    }
                  }}
                >
                  {t.parentThreadId !== null && <Icon name="fork" />}
                  <span>{title}</span>
                  {waiting.has(t.threadId) && <span class="badge attention">waiting</span>}
                  {!waiting.has(t.threadId) && paused.has(t.threadId) && <span class="badge attention">interrupted</span>}
                </button>
                {confirming === t.threadId ? (
                  <button
                    type="button"
                    class="danger small"
                    ref={(button) => button?.focus()}
                    onClick={() => void remove(t.threadId)}
                    onBlur={() => setConfirming(null)}
                    onKeyDown={(e) => {
                      if (e.key !== "Escape") return;
                      e.preventDefault();
                      refocusDelete.current = t.threadId;
                      setConfirming(null);
                    }}
                  >
                    Delete?
                  </button>
                ) : (
                  <button
                    type="button"
                    class="icon-button"
                    tabIndex={t.threadId === roving ? 0 : -1}
                    aria-label={`Delete thread ${title}`}
                    ref={(button) => {
                      if (button === null || refocusDelete.current !== t.threadId) return;
                      refocusDelete.current = null;
                      button.focus();
                    }}
                    onClick={() => setConfirming(t.threadId)}
                  >
                    <Icon name="trash" />
                  </button>
                )}
              </div>
              {sub}
            </li>
          );
        })}
      </ul>
    );
  };
  return (
    <nav id="threads" aria-label="Threads">
      {render(null)}
    </nav>
  );
}

function Sidebar({ store }: { store: AppStore }) {
  return (
    <aside class="sidebar">
      <div class="sidebar-top">
        <button type="button" class="primary" onClick={() => void store.newThread()}>
          <Icon name="plus" /> New thread
        </button>
        <label class="search">
          <span class="visually-hidden">Search threads</span>
          <input
            type="search"
            placeholder="Search threads"
            value={store.search.value}
            onInput={(e) => (store.search.value = (e.target as HTMLInputElement).value)}
            onKeyDown={(e) => {
              // Down from the search box goes to the first thread it found.
              if (e.key !== "ArrowDown") return;
              const first = document.querySelector<HTMLElement>('nav[aria-label="Threads"] .thread-open');
              if (first === null) return;
              e.preventDefault();
              first.focus();
            }}
          />
        </label>
      </div>
      <ThreadTree store={store} />
    </aside>
  );
}

function Queue({ store, view }: { store: AppStore; view: ThreadView }) {
  const items = view.queue.value;
  if (items.length === 0) return null;
  return (
    <section class="queue" aria-labelledby="queue-title">
      <h3 id="queue-title">Queued ({items.length} of 8)</h3>
      <ol>
        {items.map((item) => {
          const text = textOf(item.input);
          return (
            <li key={item.itemId}>
              <span class="plain">{text}</span>
              <button
                type="button"
                class="icon-button"
                aria-label={`Remove queued: ${text.slice(0, 40)}`}
                onClick={(e) => {
                  // The focus goes to the next entry's button (the previous one's for the last), else the
                  // input box.
                  const row = e.currentTarget.closest("li");
                  const next = (row?.nextElementSibling ?? row?.previousElementSibling)?.querySelector("button");
                  void store.removeQueued(item.itemId).then(() => focusOrComposer(next));
                }}
              >
                <Icon name="trash" />
              </button>
            </li>
          );
        })}
      </ol>
    </section>
  );
}

function Composer({ store, view }: { store: AppStore; view: ThreadView | null }) {
  const [text, setText] = useState("");
  const input = useRef<HTMLTextAreaElement>(null);
  const running = view !== null && isActive(view.run.value);
  useEffect(() => input.current?.focus(), [view]);
  const send = async (queue: boolean) => {
    const value = text;
    const ok = queue ? await store.enqueue(value) : await store.send(value);
    if (ok) setText((now) => (now === value ? "" : now));
  };
  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        void send(false);
      }}
    >
      <label for={kComposerId} class="visually-hidden">
        Message to keel
      </label>
      <textarea
        id={kComposerId}
        ref={input}
        rows={3}
        value={text}
        placeholder={running ? "Steer the running task (Enter), queue it (Alt+Enter), stop (Esc)" : "Ask keel (Enter to send)"}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          // Enter sends (steers while a turn runs); Alt+Enter or Shift+Alt+Enter (the spec's) queues;
          // Shift+Enter is a new line.
          if (e.key === "Enter" && (!e.shiftKey || e.altKey)) {
            e.preventDefault();
            void send(e.altKey && running);
          } else if (e.key === "Escape" && running) {
            e.preventDefault();
            void store.interrupt();
          }
        }}
      />
      <div class="composer-actions">
        <button type="submit" class="primary" disabled={store.connection.value !== "open"}>
          <Icon name="send" /> {running ? "Steer" : "Send"}
        </button>
        {running && (
          <>
            <button type="button" onClick={() => void send(true).then(focusComposer)}>
              <Icon name="queue" /> Queue
            </button>
            {/* Stop goes away with the turn: the focus goes back to the input box. */}
            <button type="button" class="danger" onClick={() => void store.interrupt().then(focusComposer)}>
              <Icon name="stop" /> Stop
            </button>
          </>
        )}
      </div>
    </form>
  );
}

function ModeSelect({ store, view }: { store: AppStore; view: ThreadView | null }) {
  const policy = store.policy.value;
  if (view === null) return <span class="mode">Policy: {kModeLabels[policy.defaultMode as Mode] ?? policy.defaultMode}</span>;
  const mode = policy.threadModes[view.threadId] ?? policy.defaultMode;
  return (
    <label class="mode">
      Policy{" "}
      <select value={mode} onChange={(e) => void store.setMode(view.threadId, (e.target as HTMLSelectElement).value as Mode)}>
        {kModes.map((m) => (
          <option key={m} value={m}>
            {kModeLabels[m]}
          </option>
        ))}
      </select>
    </label>
  );
}

const kConnectionText = {
  connecting: "Connecting to keel…",
  open: "Connected",
  reconnecting: "keel is not reachable — reconnecting…",
  refused: "",
  expired: "",
} as const;

function Connection({ store }: { store: AppStore }) {
  const state = store.connection.value;
  if (state === "refused") {
    return (
      <p class="banner error" role="alert" data-state={state}>
        keel refused this page or is not running. Open the link keel printed (the one with #token=…).
      </p>
    );
  }
  if (state === "expired") {
    return (
      <p class="banner error" role="alert" data-state={state}>
        keel was restarted and no longer knows this page. Open the link keel printed (the one with #token=…), in
        any tab: this page then reconnects by itself.
      </p>
    );
  }
  return (
    <span class={`conn ${state}`} role="status" data-state={state}>
      {kConnectionText[state]}
    </span>
  );
}

function Main({ store }: { store: AppStore }) {
  const view = store.current.value;
  const threadId = view?.threadId ?? null;
  const approvals = store.approvals.value.filter((a) => a.threadId === threadId);
  const interactions = store.interactions.value.filter((i) => i.threadId === threadId);
  const uncertain = store.uncertain.value.filter((u) => u.threadId === threadId);
  const run = view?.run.value ?? null;
  const canContinue = view !== null && run !== null && (run.state === "interrupted" || run.state === "budget_paused");
  const title = store.threads.value.find((t) => t.threadId === threadId)?.title;
  const status = store.status.value;
  return (
    <main class="main">
      <header class="topbar">
        <h1>{view === null ? "New thread" : title || "(untitled)"}</h1>
        {run !== null && <span class={`run-state ${run.state}`} data-run-state={run.state}>{run.state.replace(/_/g, " ")}</span>}
        <ModelPicker store={store} view={view} />
        <ModeSelect store={store} view={view} />
        <Connection store={store} />
      </header>
      <div class="scroll">
        {view !== null && <Transcript store={store} view={view} />}
        {view === null && <p class="empty">Write below to start a thread.</p>}
        {run?.recovered === true && isActive(run) && <p class="notice">keel restarted and picked this task up again.</p>}
        {approvals.map((a) => (
          <ApprovalCard key={a.approvalId} store={store} approval={a} />
        ))}
        {interactions.map((i) => (
          <InteractionCard key={i.interactionId} store={store} interaction={i} />
        ))}
        {uncertain.map((u) => (
          <UncertainCard key={u.runId} store={store} uncertain={u} />
        ))}
        {canContinue && run !== null && view !== null && (
          <ContinueCard store={store} run={{ threadId: view.threadId, runId: run.runId, turnId: run.turnId, state: run.state, canContinue: true }} />
        )}
      </div>
      {view !== null && <Queue store={store} view={view} />}
      {status !== null && (
        <p class={`status ${status.kind}`} role={status.kind === "error" ? "alert" : "status"}>
          {status.text}
        </p>
      )}
      <Composer store={store} view={view} />
    </main>
  );
}

/** The first thing Tab reaches: links to the two places a person works from (shown when focused). */
function SkipLinks() {
  const skip = (e: Event, to: () => void) => {
    e.preventDefault();
    to();
  };
  return (
    <div class="skip-links">
      <a href={`#${kComposerId}`} onClick={(e) => skip(e, focusComposer)}>
        Skip to the message box
      </a>
      <a href="#threads" onClick={(e) => skip(e, focusThreads)}>
        Skip to the threads
      </a>
    </div>
  );
}

export function App({ store }: { store: AppStore }) {
  return (
    <div class="app">
      <SkipLinks />
      <Sidebar store={store} />
      <Main store={store} />
    </div>
  );
}
