// A steer that arrives too late. keel answers turn.input with `turn.ended` (it raced the turn's end) or
// `enqueued` plus a reason (the turn is ending) only inside a window of microseconds after the final reply,
// which no test can hit on purpose against a real keel; so this test puts a stand-in for keel's WebSocket
// (Playwright's routeWebSocket) behind the page and gives exactly those answers, in keel's shapes.
import { expect, standInUrl, test } from "./keel";

test("a steer that arrives too late is sent again, queued, and the page shows why", async ({ page, keel }) => {
  const seen: string[] = [];
  const results: Record<string, unknown> = {
    initialize: { protocolVersion: 1, unfinished: [] },
    "thread.list": { threads: [{ threadId: "t1", title: "Busy thread", revision: 1, leafNodeId: "n1", parentThreadId: null, updatedAt: 1 }] },
    "policy.read": { defaultMode: "ask_writes", threadModes: {}, rules: [], hostPermissions: [] },
    "thread.read": {
      threadId: "t1",
      title: "Busy thread",
      revision: 1,
      leafNodeId: "n1",
      nodes: [{ id: "n1", kind: "user_message", runId: "r1", body: { content: [{ type: "text", text: "work" }] } }],
      latestRun: { runId: "r1", turnId: "u1", state: "streaming_model", stopReason: null, usage: {} },
      lastSeq: 10,
    },
    "queue.list": { threadId: "t1", items: [], revision: 1, lastSeq: 10 },
  };
  await page.routeWebSocket(/\/stand-in/, (ws) => {
    ws.onMessage((message) => {
      const request = JSON.parse(String(message)) as { id: number; method: string; params: { input?: string } };
      seen.push(request.method);
      if (request.method === "turn.input" && seen.filter((m) => m === "turn.input").length === 1) {
        ws.send(JSON.stringify({ jsonrpc: "2.0", id: request.id, error: { code: -32000, message: "the turn ended", data: { code: "turn.ended" } } }));
        return;
      }
      if (request.method === "turn.input") {
        ws.send(JSON.stringify({ jsonrpc: "2.0", id: request.id, result: { threadId: "t1", itemId: "q1", position: 0, queueLength: 1, revision: 2, action: "enqueued", reason: "the turn is ending; the input runs next" } }));
        const items = [{ itemId: "q1", position: 0, input: request.params.input, revision: 1 }];
        ws.send(JSON.stringify({ jsonrpc: "2.0", method: "event", params: { type: "queue.updated", threadId: "t1", seq: 11, payload: { threadId: "t1", items, revision: 2 } } }));
        return;
      }
      ws.send(JSON.stringify({ jsonrpc: "2.0", id: request.id, result: results[request.method] ?? {} }));
    });
  });
  await keel.startKeel();
  await page.goto(standInUrl(keel));
  await page.locator('[data-state="open"]').waitFor();
  await page.locator(".thread-open").first().click();
  await expect(page.locator("[data-run-state]")).toHaveAttribute("data-run-state", "streaming_model");
  const box = page.getByLabel("Message to keel");
  await box.fill("one more thing");
  await box.press("Enter");
  await expect(page.locator(".status")).toHaveText("Queued: the turn is ending; the input runs next");
  await expect(page.locator(".queue li")).toContainText("one more thing");
  expect(seen.filter((m) => m === "turn.input")).toHaveLength(2);
  await expect(box).toHaveValue("");
});
