// The thread tree in the transcript: the "‹ 2 / 3 ›" switcher shown where branches leave the selected one
// (thread.selectBranch), and the inline editor of a user message whose "Save & send" starts a new branch
// from the node before it (turn.submit{parentNodeId}). The logic is in ../branches.ts.
import { useEffect, useRef, useState } from "preact/hooks";
import type { BranchSwitch } from "../branches";
import { isActive, type AppStore, type ThreadView } from "../store";

export function BranchSwitcher({ store, view, at }: { store: AppStore; view: ThreadView; at: BranchSwitch }) {
  const running = isActive(view.run.value);
  // aria-disabled rather than disabled: a button that keeps its focus when it reaches an end, so a keyboard
  // user can go on with the other one.
  const go = (leaf: string | null) => {
    if (leaf !== null && !running) void store.selectBranch(leaf);
  };
  const hint = running ? "A turn is running: branches can be switched when it ends" : undefined;
  return (
    <div class="branch-switch" role="group" aria-label={`Branch ${at.index + 1} of ${at.count} at this message`} title={hint}>
      <button type="button" class="icon-button" aria-label="Previous branch" aria-disabled={at.previousLeaf === null || running} onClick={() => go(at.previousLeaf)}>
        ‹
      </button>
      <span class="branch-position" aria-hidden="true">
        {at.index + 1} / {at.count}
      </span>
      <button type="button" class="icon-button" aria-label="Next branch" aria-disabled={at.nextLeaf === null || running} onClick={() => go(at.nextLeaf)}>
        ›
      </button>
    </div>
  );
}

/** Where the Edit button of message `nodeId` is, to give it the focus back when the editor closes. */
function focusEditButton(nodeId: string): void {
  const button = document.querySelector<HTMLButtonElement>(`button[data-edit-node="${CSS.escape(nodeId)}"]`);
  button?.focus();
}

export function MessageEditor({
  store,
  view,
  nodeId,
  parentNodeId,
  initial,
}: {
  store: AppStore;
  view: ThreadView;
  nodeId: string;
  parentNodeId: string;
  initial: string;
}) {
  const [text, setText] = useState(initial);
  const [sending, setSending] = useState(false);
  const input = useRef<HTMLTextAreaElement>(null);
  const running = isActive(view.run.value);
  useEffect(() => {
    const box = input.current;
    if (box === null) return;
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  }, []);
  const close = () => {
    view.editing.value = null;
    setTimeout(() => focusEditButton(nodeId), 0);
  };
  const send = async () => {
    if (running || sending || text.trim() === "") return;
    setSending(true);
    const sent = await store.resendEdited(parentNodeId, text);
    setSending(false);
    if (sent) document.getElementById("composer-input")?.focus();
  };
  const id = `edit-${nodeId}`;
  return (
    <form
      class="msg user editing"
      aria-label="Edit your message"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <label for={id} class="who">
        Edit your message
      </label>
      <textarea
        id={id}
        ref={input}
        rows={3}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          // As in the input box: Enter sends, Shift+Enter is a new line; Esc leaves the text as it was.
          if (e.key === "Enter" && !e.shiftKey) {
            e.preventDefault();
            void send();
          } else if (e.key === "Escape") {
            e.preventDefault();
            close();
          }
        }}
      />
      {running && <p class="notice">A turn is running: stop it or let it finish to send the edit.</p>}
      <div class="editor-actions">
        <button type="submit" class="primary" disabled={running || sending || text.trim() === ""}>
          Save &amp; send
        </button>
        <button type="button" onClick={close}>
          Cancel
        </button>
      </div>
    </form>
  );
}
