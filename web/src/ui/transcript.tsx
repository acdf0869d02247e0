// The open thread's transcript: persisted nodes (thread.read + item.complete) and what streams now.
// Model, tool and page text is shown as text, or as Markdown through renderMarkdown (which escapes HTML);
// nothing from keel reaches innerHTML any other way.
import { memo } from "preact/compat";
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { branchSwitches, editParent } from "../branches";
import { imagesOf, imageUrl, textOf } from "../content";
import { renderMarkdown } from "../markdown";
import type { AppStore, NodeView, StreamItem, ThreadView, Usage } from "../store";
import { BranchSwitcher, MessageEditor } from "./branches";
import { Icon } from "./icons";

function Markdown({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return <div class="markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}

function Reasoning({ text }: { text: string }) {
  if (text === "") return null;
  return (
    <details class="reasoning">
      <summary>Reasoning</summary>
      <div class="plain">{text}</div>
    </details>
  );
}

interface Box {
  ref?: string;
  x: number;
  y: number;
  w: number;
  h: number;
}

/** A screenshot with the boxes of the last snapshot's refs drawn over it (browser_screenshot details). */
function Screenshot({ details }: { details: Record<string, unknown> }) {
  const format = details["format"] === "jpeg" ? "jpeg" : "png";
  const data = details[format];
  if (typeof data !== "string") return null;
  const url = imageUrl("image/" + format, data);
  if (url === null) return null;
  const viewport = details["viewport"] as { width?: number; height?: number } | undefined;
  const width = viewport?.width ?? 1;
  const height = viewport?.height ?? 1;
  const boxes = (Array.isArray(details["boxes"]) ? details["boxes"] : []) as Box[];
  return (
    <figure class="shot">
      <div class="shot-frame">
        <img src={url} alt="Screenshot of the page" />
        <svg class="boxes" viewBox={`0 0 ${width} ${height}`} preserveAspectRatio="none" aria-hidden="true">
          {boxes.map((b, i) => (
            <g key={i}>
              <rect x={b.x} y={b.y} width={b.w} height={b.h} />
              {b.ref !== undefined && (
                <text x={b.x + 2} y={b.y + 12}>
                  {b.ref}
                </text>
              )}
            </g>
          ))}
        </svg>
      </div>
      {boxes.length > 0 && <figcaption>{boxes.length} elements marked</figcaption>}
    </figure>
  );
}

export function Diff({ text }: { text: string }) {
  return (
    <pre class="diff">
      {text.split("\n").map((line, i) => (
        <span key={i} class={line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : ""}>
          {line + "\n"}
        </span>
      ))}
    </pre>
  );
}

function Details({ details }: { details: unknown }) {
  if (typeof details !== "object" || details === null) return null;
  const d = details as Record<string, unknown>;
  return (
    <>
      {(typeof d["png"] === "string" || typeof d["jpeg"] === "string") && <Screenshot details={d} />}
      {typeof d["diff"] === "string" && d["diff"] !== "" && <Diff text={d["diff"]} />}
    </>
  );
}

function ResultBody({ body }: { body: Record<string, unknown> }) {
  const text = textOf(body["content"]);
  const images = imagesOf(body["content"]);
  const details = body["details"];
  const hasShot = typeof details === "object" && details !== null && ("png" in details || "jpeg" in details);
  return (
    <div class={body["isError"] === true ? "result error" : "result"}>
      <pre class="plain">{text}</pre>
      {!hasShot &&
        images.map((img, i) => {
          const url = imageUrl(img.mediaType, img.data ?? "");
          return url === null ? null : <img key={i} class="result-image" src={url} alt="Image the tool returned" />;
        })}
      <Details details={details} />
    </div>
  );
}

function ToolCard({ call, result, live }: { call: NodeView; result?: NodeView | undefined; live?: StreamItem | undefined }) {
  const name = String(call.body["name"] ?? "tool");
  const args = call.body["arguments"];
  const failed = result?.body["isError"] === true;
  const state = result !== undefined ? (failed ? "failed" : "done") : live !== undefined ? "running" : "waiting";
  return (
    <article class={`tool-card ${state}`} aria-label={`Tool call ${name}: ${state}`}>
      <header>
        <Icon name="tool" />
        <span class="tool-name">{name}</span>
        <span class="badge">{state}</span>
      </header>
      <details>
        <summary>Parameters</summary>
        <pre class="plain">{JSON.stringify(args, null, 2)}</pre>
      </details>
      {live !== undefined && result === undefined && <Progress item={live} />}
      {result !== undefined && <ResultBody body={result.body} />}
    </article>
  );
}

function Progress({ item }: { item: StreamItem }) {
  const progress = item.progress.value;
  return (
    <div class="progress" role="status">
      <span class="spinner" aria-hidden="true" /> {progress?.text ?? "running…"}
      {progress?.details !== undefined && <Details details={progress.details} />}
    </div>
  );
}

function UsageLine({ usage }: { usage: Usage }) {
  const cost = usage.costUsd !== undefined ? ` · $${usage.costUsd.toFixed(4)}` : "";
  return (
    <p class="usage">
      {usage.inputTokens ?? 0} in · {usage.outputTokens ?? 0} out
      {usage.cachedInputTokens ? ` · ${usage.cachedInputTokens} cached` : ""}
      {usage.reasoningTokens ? ` · ${usage.reasoningTokens} reasoning` : ""}
      {cost}
    </p>
  );
}

const Message = memo(function Message({
  node,
  result,
  live,
  onFork,
  onEdit,
}: {
  node: NodeView;
  result?: NodeView | undefined;
  live?: StreamItem | undefined;
  onFork: (id: string) => void;
  onEdit: (id: string) => void;
}) {
  const forkButton = (
    <button type="button" class="icon-button fork" onClick={() => onFork(node.id)} aria-label="Fork the thread at this message" title="Fork here">
      <Icon name="fork" />
    </button>
  );
  switch (node.kind) {
    case "user_message": {
      const steered = node.body["steered"] === true;
      return (
        <article class={steered ? "msg user steer" : "msg user"} aria-label={steered ? "Your steer" : "You"}>
          <div class="who">{steered ? "Steer" : "You"}</div>
          <div class="plain">{textOf(node.body["content"])}</div>
          {!steered && (
            <button type="button" class="icon-button edit" data-edit-node={node.id} onClick={() => onEdit(node.id)} aria-label="Edit this message and send it again as a new branch" title="Edit">
              <Icon name="edit" />
            </button>
          )}
          {forkButton}
        </article>
      );
    }
    case "assistant_message": {
      const text = textOf(node.body["content"]);
      const reasoning = textOf(node.body["content"], "reasoning");
      if (text === "" && reasoning === "") return null;
      return (
        <article class="msg assistant" aria-label="keel">
          <div class="who">keel</div>
          <Reasoning text={reasoning} />
          <Markdown text={text} />
          {forkButton}
        </article>
      );
    }
    case "tool_call":
      return <ToolCard call={node} result={result} live={live} />;
    case "notice":
      return <p class="notice">{String(node.body["text"] ?? "")}</p>;
    case "approval_decision":
      return <p class="notice">Approval: {String(node.body["decision"] ?? "")}</p>;
    case "compaction":
      return (
        <details class="notice">
          <summary>History summarized</summary>
          <div class="plain">{String(node.body["summary"] ?? "")}</div>
        </details>
      );
    default:
      return null;
  }
});

function Streaming({ item }: { item: StreamItem }) {
  return (
    <article class="msg assistant streaming" aria-label="keel (writing)" aria-busy="true">
      <div class="who">keel</div>
      {item.reasoning.value !== "" && (
        <details class="reasoning">
          <summary>Reasoning…</summary>
          <div class="plain">{item.reasoning.value}</div>
        </details>
      )}
      <div class="plain live-text">{item.text.value}</div>
    </article>
  );
}

// A long thread is windowed: it opens with its newest kFirstWindow entries, scrolled to the end, and
// renders kWindowStep older ones each time the person comes near the top (or presses "Show earlier
// messages"), keeping what is on screen where it was. Ctrl+F (Cmd+F, F3) renders the whole thread first, so
// the browser's find-in-page sees every message. While the view is at its end it stays there as messages
// arrive and grow.
const kFirstWindow = 40;
const kWindowStep = 60;

/** Whether `scroller` shows its end (within a few pixels). */
function atEnd(scroller: HTMLElement): boolean {
  return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48;
}

export function Transcript({ store, view }: { store: AppStore; view: ThreadView }) {
  const nodes = view.nodes.value;
  const streaming = view.streaming.value;
  const usage = view.usage.value;
  const results = new Map<string, NodeView>();
  for (const n of nodes) {
    if (n.kind === "tool_result" && typeof n.body["toolCallId"] === "string") results.set(n.body["toolCallId"], n);
  }
  const liveTools = new Map<string, StreamItem>();
  for (const s of streaming) if (s.toolCallId !== undefined) liveTools.set(s.toolCallId, s);
  const onFork = useCallback((id: string) => void store.fork(id), [store]);
  const onEdit = useCallback((id: string) => (view.editing.value = id), [view]);
  const switches = branchSwitches(nodes, view.branches.value);
  const editing = view.editing.value;
  // The entries (indices into nodes): every node but the results shown inside their tool call's card.
  const entries: number[] = [];
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i]!;
    if (!(n.kind === "tool_result" && typeof n.body["toolCallId"] === "string")) entries.push(i);
  }
  // The first entry shown: null follows the newest kFirstWindow; a number is where the person scrolled to.
  const [shown, setShown] = useState<{ view: ThreadView; first: number | null }>({ view, first: null });
  const chosen = shown.view === view ? shown.first : null;
  const first = chosen ?? Math.max(0, entries.length - kFirstWindow);

  const root = useRef<HTMLDivElement>(null);
  const earlierButton = useRef<HTMLButtonElement>(null);
  const stick = useRef(true);
  /** the first shown entry's element and its top before older ones were added above it */
  const anchor = useRef<{ element: Element; top: number; focusFirst: boolean } | null>(null);

  const showFrom = (target: number) => {
    if (target >= first) return;
    const element = root.current?.querySelector(":scope > :not(.earlier)");
    anchor.current =
      element === null || element === undefined
        ? null
        : {
            element,
            top: element.getBoundingClientRect().top,
            focusFirst: target === 0 && document.activeElement === earlierButton.current,
          };
    setShown({ view, first: target });
  };
  const showEarlier = () => showFrom(Math.max(0, first - kWindowStep));
  const showAll = () => showFrom(0);

  // A newly opened thread starts at its end.
  useLayoutEffect(() => {
    stick.current = true;
  }, [view]);

  // After each render: keep what was on screen in place when older entries came in above it, else stay at
  // the end when the view was there.
  useLayoutEffect(() => {
    const scroller = root.current?.closest<HTMLElement>(".scroll");
    if (scroller === null || scroller === undefined) return;
    const kept = anchor.current;
    anchor.current = null;
    if (kept !== null && kept.element.isConnected) {
      scroller.scrollTop += kept.element.getBoundingClientRect().top - kept.top;
      if (kept.focusFirst) root.current?.querySelector<HTMLElement>("button, summary, a[href]")?.focus();
    } else if (stick.current) {
      scroller.scrollTop = scroller.scrollHeight;
    }
  });

  // Follows the scroll position, and the size of what is shown (messages laid out late, images loading).
  useEffect(() => {
    const element = root.current;
    const scroller = element?.closest<HTMLElement>(".scroll");
    if (element === null || scroller === null || scroller === undefined) return;
    const onScroll = () => {
      stick.current = atEnd(scroller);
    };
    const resized = new ResizeObserver(() => {
      if (stick.current) scroller.scrollTop = scroller.scrollHeight;
    });
    scroller.addEventListener("scroll", onScroll, { passive: true });
    resized.observe(element);
    return () => {
      scroller.removeEventListener("scroll", onScroll);
      resized.disconnect();
    };
  }, []);

  // Near the top: the next older entries.
  useEffect(() => {
    const button = earlierButton.current;
    const scroller = root.current?.closest<HTMLElement>(".scroll");
    if (button === null || scroller === null || scroller === undefined) return;
    const seen = new IntersectionObserver(
      (changes) => {
        if (changes.some((c) => c.isIntersecting)) showEarlier();
      },
      { root: scroller, rootMargin: "400px 0px 0px 0px" },
    );
    seen.observe(button);
    return () => seen.disconnect();
  });

  // Find in page: the whole thread first.
  useEffect(() => {
    if (first === 0) return;
    const onKey = (e: KeyboardEvent) => {
      if (((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "f") || e.key === "F3") showAll();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  });

  const out = [];
  for (let k = first; k < entries.length; k++) {
    const i = entries[k]!;
    const n = nodes[i]!;
    const callId = typeof n.body["toolCallId"] === "string" ? n.body["toolCallId"] : "";
    const branchSwitch = switches.get(n.id);
    if (branchSwitch !== undefined) out.push(<BranchSwitcher key={"branches-" + branchSwitch.at} store={store} view={view} at={branchSwitch} />);
    if (editing === n.id) {
      const initial = textOf(n.body["content"]);
      out.push(<MessageEditor key={"edit-" + n.id} store={store} view={view} nodeId={n.id} parentNodeId={editParent(nodes, i)} initial={initial} />);
      continue;
    }
    out.push(<Message key={n.id} node={n} result={results.get(callId)} live={liveTools.get(callId)} onFork={onFork} onEdit={onEdit} />);
    const next = nodes[i + 1];
    const runId = n.runId ?? null;
    if (runId !== null && (next === undefined || next.runId !== runId) && usage[runId] !== undefined) {
      out.push(<UsageLine key={"u" + n.id} usage={usage[runId]} />);
    }
  }
  return (
    <div class="transcript" ref={root} aria-live="polite" aria-relevant="additions">
      {first > 0 && (
        <button type="button" class="earlier" ref={earlierButton} onClick={showEarlier}>
          Show earlier messages ({first} more)
        </button>
      )}
      {out}
      {streaming
        .filter((s) => s.kind === "assistant_message")
        .map((s) => (
          <Streaming key={s.itemId} item={s} />
        ))}
    </div>
  );
}
