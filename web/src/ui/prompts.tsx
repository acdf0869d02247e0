// What the engine waits for a person to decide: approvals (with the full preview and exactly the decisions
// offered), ask_user questions and timers, a write whose outcome is unknown, a run to continue. Answered, a
// card goes away: the focus moves to the input box, also when it goes away because another tab answered it.
import { useRef, useState } from "preact/hooks";
import type { EventApprovalRequest, EventInteractionRequest, EventRunUncertain } from "../../../clients/ts/protocol";
import type { AppStore, Unfinished } from "../store";
import { focusComposer, useFocusHomeOnRemoval } from "./focus";
import { Icon } from "./icons";
import { Diff } from "./transcript";

const kDecisionLabels: Record<string, string> = {
  accept: "Allow once",
  acceptForSite: "Allow for this site",
  decline: "Deny",
};

const kLifetimeLabels: Record<string, string> = {
  turn: "for the rest of this turn",
  session: "until keel stops",
  untilRevoked: "until revoked",
};

export function ApprovalCard({ store, approval }: { store: AppStore; approval: EventApprovalRequest }) {
  const remember = approval.remember;
  const [lifetime, setLifetime] = useState<string>(remember?.defaultLifetime ?? "session");
  const preview = approval.preview;
  const tool = approval.tool as { name: string; label?: string };
  const titleId = `approval-${approval.approvalId}`;
  const root = useRef<HTMLElement>(null);
  useFocusHomeOnRemoval(root);
  return (
    <section class="card approval" role="group" aria-labelledby={titleId} ref={root}>
      <h3 id={titleId}>
        <Icon name="warn" /> Approve {tool.label ?? tool.name}?
      </h3>
      {preview !== undefined && (
        <>
          <p class="target">
            <span class="k">{preview.action}</span> <code>{preview.target}</code>
          </p>
          {preview.sensitive && (
            <p class="sensitive" role="alert">
              Sensitive: {preview.sensitiveReasons.join("; ")}
            </p>
          )}
          {preview.change.format === "diff" || preview.change.format === "excerpt" ? (
            <Diff text={preview.change.text} />
          ) : preview.change.format === "arguments" ? (
            <pre class="plain">{preview.change.text}</pre>
          ) : null}
        </>
      )}
      {approval.reason !== undefined && <p class="reason">{approval.reason}</p>}
      <details open={preview === undefined}>
        <summary>All parameters</summary>
        <pre class="plain">{JSON.stringify(approval.arguments, null, 2)}</pre>
      </details>
      {remember !== undefined && approval.offers.includes("acceptForSite") && (
        <p class="remember">
          <label>
            Remember{" "}
            <select value={lifetime} onChange={(e) => setLifetime((e.target as HTMLSelectElement).value)}>
              {remember.lifetimes.map((l) => (
                <option key={l} value={l}>
                  {kLifetimeLabels[l] ?? l}
                </option>
              ))}
            </select>
          </label>{" "}
          <span class="hint">{remember.text}</span>
        </p>
      )}
      <div class="actions">
        {approval.offers.map((decision) => (
          <button
            key={decision}
            type="button"
            class={decision === "decline" ? "danger" : decision === "accept" ? "primary" : ""}
            onClick={() =>
              void store
                .answerApproval(approval, decision as "accept" | "acceptForSite" | "decline", lifetime)
                .then(focusComposer)
            }
          >
            {kDecisionLabels[decision] ?? decision}
          </button>
        ))}
      </div>
    </section>
  );
}

export function InteractionCard({ store, interaction }: { store: AppStore; interaction: EventInteractionRequest }) {
  const [answer, setAnswer] = useState("");
  const titleId = `interaction-${interaction.interactionId}`;
  const root = useRef<HTMLElement>(null);
  useFocusHomeOnRemoval(root);
  if (interaction.kind === "timer") {
    const due = interaction.dueAtMs !== undefined ? new Date(interaction.dueAtMs).toLocaleTimeString() : "soon";
    return (
      <section class="card interaction" role="group" aria-labelledby={titleId} ref={root}>
        <h3 id={titleId}>Timer</h3>
        <p>The agent waits until {due}. Stop the turn to end the wait.</p>
      </section>
    );
  }
  const question = String(interaction.request["question"] ?? "");
  const choices = Array.isArray(interaction.request["choices"]) ? (interaction.request["choices"] as unknown[]) : [];
  return (
    <section class="card interaction" role="group" aria-labelledby={titleId} ref={root}>
      <h3 id={titleId}>The agent asks</h3>
      <p class="plain">{question}</p>
      {choices.length > 0 && (
        <div class="actions">
          {choices.map((c, i) => (
            <button key={i} type="button" onClick={() => void store.answerInteraction(interaction, String(c)).then(focusComposer)}>
              {String(c)}
            </button>
          ))}
        </div>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (answer.trim() !== "") void store.answerInteraction(interaction, answer).then(focusComposer);
        }}
      >
        <label>
          Your answer
          <input type="text" value={answer} onInput={(e) => setAnswer((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="primary">
          Answer
        </button>
      </form>
    </section>
  );
}

const kResolutionLabels = { retry: "Retry", mark_done: "Mark done", fail: "It failed" } as const;

export function UncertainCard({ store, uncertain }: { store: AppStore; uncertain: EventRunUncertain & { threadId: string } }) {
  const root = useRef<HTMLElement>(null);
  useFocusHomeOnRemoval(root);
  return (
    <section class="card uncertain" role="group" aria-label="Unknown outcome" ref={root}>
      <h3>
        <Icon name="warn" /> Did {uncertain.toolCallId === "" ? uncertain.name : <code>{uncertain.name}</code>} take effect?
      </h3>
      <p>keel stopped while this write was running; its outcome is unknown.</p>
      <div class="actions">
        {uncertain.offers.map((r) => (
          <button key={r} type="button" onClick={() => void store.resolveUncertain(uncertain.threadId, uncertain.runId, r).then(focusComposer)}>
            {kResolutionLabels[r]}
          </button>
        ))}
      </div>
    </section>
  );
}

export function ContinueCard({ store, run }: { store: AppStore; run: Unfinished }) {
  const paused = run.state === "budget_paused";
  const root = useRef<HTMLElement>(null);
  useFocusHomeOnRemoval(root);
  return (
    <section class="card continue" role="group" aria-label="Unfinished task" ref={root}>
      <p>{paused ? "The task paused at its token budget." : "The task was interrupted."}</p>
      <div class="actions">
        <button type="button" class="primary" onClick={() => void store.resume(run.threadId, run.runId).then(focusComposer)}>
          Continue
        </button>
      </div>
    </section>
  );
}
