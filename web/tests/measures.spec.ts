// Measures that REPORT (print) and keep as artifacts, never assert wall-clock: opening a 2,000-message
// thread, streaming 500 deltas a second (main-thread long tasks), the built app's gzipped size.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { answerFromStandIn, expect, openApp, respond, standInUrl, test, text } from "./keel";

function report(name: string, value: unknown): void {
  console.log(`measure: ${name} = ${JSON.stringify(value)}`);
  writeFileSync(test.info().outputPath(`${name}.json`), JSON.stringify(value) + "\n");
}

test("measure: the built app's gzipped size", async () => {
  const size = JSON.parse(readFileSync(join(import.meta.dirname, "../dist/size.json"), "utf8")) as { gzippedBytes: number };
  expect(size.gzippedBytes).toBeGreaterThan(0);
  report("bundle_gzipped_kb", Math.round(size.gzippedBytes / 102.4) / 10);
});

test("measure: 500 deltas a second stream without long main-thread tasks", async ({ page, keel }) => {
  const reply = "0123456789".repeat(150);  // 1,500 one-byte deltas, 2 ms apart: about 500 a second
  await keel.startModel({ responses: [respond("stream", [text(reply, 1)], { chunk_delay_ms: 2 })] });
  await keel.startKeel();
  await page.addInitScript(() => {
    const w = window as unknown as { __longTasks: number[] };
    w.__longTasks = [];
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) w.__longTasks.push(entry.duration);
    }).observe({ type: "longtask", buffered: true });
  });
  await openApp(page, keel);
  await page.getByLabel("Message to keel").fill("stream fast");
  await page.keyboard.press("Enter");
  await expect(page.locator(".msg.streaming")).toBeVisible();
  const before = await page.evaluate(() => (window as unknown as { __longTasks: number[] }).__longTasks.length);
  const started = Date.now();
  await expect(page.locator(".msg.assistant .markdown")).toHaveText(reply, { timeout: 30_000 });
  const seconds = (Date.now() - started) / 1000;
  const tasks = await page.evaluate(() => (window as unknown as { __longTasks: number[] }).__longTasks);
  const during = tasks.slice(before);
  report("stream_500_deltas_per_s", {
    deltas: reply.length,
    seconds,
    longTasksOver50ms: during.length,
    longestTaskMs: during.length === 0 ? 0 : Math.max(...during),
  });
});

test("measure: opening a thread of 2,000 messages", async ({ page, keel }) => {
  // The thread is served by a stand-in for keel's WebSocket (Playwright's routeWebSocket): building 2,000
  // nodes through a real keel takes minutes, and this measures the page, from thread.read to the screen.
  const nodes = [];
  for (let i = 0; i < 1000; i++) {
    nodes.push({ id: `u${i}`, kind: "user_message", runId: `r${i}`, body: { content: [{ type: "text", text: `Question ${i}?` }] } });
    nodes.push({
      id: `a${i}`,
      kind: "assistant_message",
      runId: `r${i}`,
      body: { content: [{ type: "text", text: `Answer **${i}** with \`code\` and a list:\n\n- one\n- two\n` }] },
    });
  }
  const results: Record<string, unknown> = {
    initialize: { protocolVersion: 1, unfinished: [] },
    "thread.list": { threads: [{ threadId: "t1", title: "Long thread", revision: 1, leafNodeId: "a999", parentThreadId: null, updatedAt: 1 }] },
    "policy.read": { defaultMode: "ask_writes", threadModes: {}, rules: [], hostPermissions: [] },
    "thread.read": { threadId: "t1", title: "Long thread", revision: 1, leafNodeId: "a999", nodes, latestRun: null, lastSeq: 0 },
    "queue.list": { threadId: "t1", items: [], revision: 1, lastSeq: 0 },
  };
  await answerFromStandIn(page, results);
  await keel.startKeel();
  await page.goto(standInUrl(keel));
  await page.locator('[data-state="open"]').waitFor();
  // Timed inside the page: from the click to the first frame that shows all 2,000 messages.
  const millis = page.evaluate(
    () =>
      new Promise<number>((done) => {
        const button = document.querySelector<HTMLButtonElement>(".thread-open");
        const started = performance.now();
        const check = () => {
          if (document.querySelectorAll(".msg").length === 2000) done(performance.now() - started);
          else requestAnimationFrame(check);
        };
        button?.click();
        requestAnimationFrame(check);
      }),
  );
  const rendered = await millis;
  await expect(page.locator(".msg.assistant").last()).toContainText("Answer 999");
  report("open_2000_message_thread_ms", Math.round(rendered));
  await page.screenshot({ path: test.info().outputPath("long-thread.png") });
});
