// The open thread's transcript: persisted nodes (thread.read + item.complete) and what streams now.
// Model, tool and page text is shown as text, or as Markdown through renderMarkdown (which escapes HTML);
// nothing from keel reaches innerHTML any other way.
import { memo } from "preact/compat";
import { useCallback, useEffect, useState } from "preact/hooks";
import { branchSwitches, editParent } from "../branches";
import { imagesOf, imageUrl, textOf } from "../content";
import { renderMarkdown } from "../markdown";
import type { AppStore, NodeView, StreamItem, ThreadView, Usage } from "../store";
import { BranchSwitcher, MessageEditor } from "./branches";
import { Icon } from "./icons";

// Rendering Markdown costs about a millisecond a message: a long thread shows its older messages as plain
// text first and upgrades them newest first in slices of a few milliseconds, so opening it never blocks the
// main thread for long.
const laterJobs: (() => void)[] = [];
let draining = false;
function drainLater(): void {
  const end = performance.now() + 8;
  while (laterJobs.length > 0 && performance.now() < end) laterJobs.pop()?.();
  if (laterJobs.length > 0) setTimeout(drainLater, 0);
  else draining = false;
}
function renderLater(job: () => void): void {
  laterJobs.push(job);
  if (!draining) {
    draining = true;
    setTimeout(drainLater, 0);
  }
}

function Markdown({ text, eager }: { text: string; eager: boolean }) {
  const [html, setHtml] = useState<string | null>(() => (eager ? renderMarkdown(text) : null));
  useEffect(() => {
    let live = true;
    if (eager) setHtml(renderMarkdown(text));
    else renderLater(() => live && setHtml(renderMarkdown(text)));
    return () => {
      live = false;
    };
  }, [text]);
  if (html === null) return <div class="markdown plain">{text}</div>;
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
      {typeof d["diff"] === "string" && <Diff text={d["diff"]} />}
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
  eager,
}: {
  node: NodeView;
  result?: NodeView | undefined;
  live?: StreamItem | undefined;
  onFork: (id: string) => void;
  onEdit: (id: string) => void;
  eager: boolean;
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
          <Markdown text={text} eager={eager} />
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

/** How many of the newest messages get their Markdown at once. */
const kEagerMarkdown = 60;

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
  const out = [];
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i]!;
    if (n.kind === "tool_result" && typeof n.body["toolCallId"] === "string") continue;
    const callId = typeof n.body["toolCallId"] === "string" ? n.body["toolCallId"] : "";
    const eager = nodes.length - i <= kEagerMarkdown;
    const branchSwitch = switches.get(n.id);
    if (branchSwitch !== undefined) out.push(<BranchSwitcher key={"branches-" + branchSwitch.at} store={store} view={view} at={branchSwitch} />);
    if (editing === n.id) {
      const initial = textOf(n.body["content"]);
      out.push(<MessageEditor key={"edit-" + n.id} store={store} view={view} nodeId={n.id} parentNodeId={editParent(nodes, i)} initial={initial} />);
      continue;
    }
    out.push(<Message key={n.id} node={n} result={results.get(callId)} live={liveTools.get(callId)} onFork={onFork} onEdit={onEdit} eager={eager} />);
    const next = nodes[i + 1];
    const runId = n.runId ?? null;
    if (runId !== null && (next === undefined || next.runId !== runId) && usage[runId] !== undefined) {
      out.push(<UsageLine key={"u" + n.id} usage={usage[runId]} />);
    }
  }
  return (
    <div class="transcript" aria-live="polite" aria-relevant="additions">
      {out}
      {streaming
        .filter((s) => s.kind === "assistant_message")
        .map((s) => (
          <Streaming key={s.itemId} item={s} />
        ))}
    </div>
  );
}
