// Steers that arrive too late: keel has ended the turn (its final reply is written and steers are refused)
// but has not said turn.complete yet. In a real keel that window lasts microseconds, so the tests hold keel
// in it with fail points armed to hold (keel/fail_points.h, docs/store.md: keel blocks at the point until the
// test writes to a FIFO; only in builds with KEEL_FAILPOINTS=ON, the default, as restart.spec.ts needs too).
// Opening a FIFO for writing returns once keel's hold has it open, so every step waits for keel, not a clock.
import { execFileSync } from "node:child_process";
import { closeSync, constants, openSync, writeSync } from "node:fs";
import { open, writeFile, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { expectAccessible } from "./a11y";
import { expect, openApp, respond, test, text, type KeelHarness } from "./keel";

/** A FIFO in the test's directory, for one hold. */
function makeFifo(keel: KeelHarness, name: string): string {
  const fifo = join(keel.dir, name);
  execFileSync("mkfifo", [fifo]);
  return fifo;
}

/** Releases a hold still waiting on `fifo` (a test that failed before its release); nothing when none waits. */
function releaseLeftoverHold(fifo: string): void {
  let fd: number;
  try {
    fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  } catch {
    return; // ENXIO: no hold has the FIFO open
  }
  writeSync(fd, "\n");
  closeSync(fd);
}

test("a steer sent after the turn ended is queued with keel's reason and runs as the next turn", async ({ page, keel }) => {
  await keel.startModel({
    responses: [
      respond("one more thing", [text("Here is the one more thing.")]),
      respond("write a haiku", [text("Autumn moonlight, a worm digs silently into the chestnut.", 8)]),
    ],
  });
  const fifo = makeFifo(keel, "release-turn-complete");
  await keel.startKeel({ KEEL_FAILPOINTS: `turn.complete.before=hold:${fifo}` });
  try {
    await openApp(page, keel);
    const box = page.getByLabel("Message to keel");
    await box.fill("write a haiku");
    await box.press("Enter");
    // The final answer has streamed and is written; keel holds before turn.complete.
    await expect(page.locator(".msg.assistant .markdown").last()).toHaveText("Autumn moonlight, a worm digs silently into the chestnut.");
    await box.fill("one more thing");
    await box.press("Enter");
    await expect(page.locator(".status")).toHaveText("Queued: the turn is ending; the input runs next");
    await expect(page.locator(".queue li")).toHaveCount(1);
    await expect(page.locator(".queue li")).toContainText("one more thing");
    await expect(box).toHaveValue("");
    await expect(page.locator(".msg.user")).toHaveCount(1);
    await page.screenshot({ path: test.info().outputPath("late-steer-queued.png") });
    await expectAccessible(page, "a late steer queued");
    // The release: opening the FIFO for writing waits until keel's hold has it open, then lets keel go on.
    await writeFile(fifo, "go\n");
    await expect(page.locator(".msg.assistant .markdown").last()).toHaveText("Here is the one more thing.");
    await expect(page.locator(".queue li")).toHaveCount(0);
    await expect(page.locator(".msg.user").last()).toContainText("one more thing");
    await expect(page.locator(".msg.steer")).toHaveCount(0);
    await expect(page.locator("[data-run-state]")).toHaveAttribute("data-run-state", "completed");
    await page.screenshot({ path: test.info().outputPath("late-steer-ran-next.png") });
  } finally {
    releaseLeftoverHold(fifo);
  }
});

test("a steer decided after the turn stopped taking steers is refused, sent again by the page, and queued", async ({ page, keel }) => {
  // What the page sends and what keel refuses, from the WebSocket's frames.
  const inputsSent: string[] = [];
  const refusals: string[] = [];
  page.on("websocket", (ws) => {
    ws.on("framesent", (frame) => {
      const message = JSON.parse(String(frame.payload)) as { method?: string; params?: { input?: unknown } };
      if (message.method === "turn.input") inputsSent.push(String(message.params?.input));
    });
    ws.on("framereceived", (frame) => {
      const message = JSON.parse(String(frame.payload)) as { error?: { data?: { code?: string } } };
      if (message.error?.data?.code !== undefined) refusals.push(message.error.data.code);
    });
  });
  await keel.startModel({
    responses: [
      respond("one more thing", [text("Here is the one more thing.")]),
      respond("write a haiku", [text("Autumn moonlight, a worm digs silently into the chestnut.", 8)]),
    ],
  });
  // Three instants: the final reply is in and steers are still admitted (before the turn stops taking
  // them); a steer routed then, before its admission is decided; and the ended turn, before turn.complete.
  const beforeClose = makeFifo(keel, "turn-steers-before-close");
  const beforeDecide = makeFifo(keel, "steer-admission-before-decide");
  const beforeComplete = makeFifo(keel, "turn-complete-before");
  const points = [
    `turn.steers.before_close=hold:${beforeClose}`,
    `steer.admission.before_decide=hold:${beforeDecide}`,
    `turn.complete.before=hold:${beforeComplete}`,
  ];
  await keel.startKeel({ KEEL_FAILPOINTS: points.join(";") });
  const holding: FileHandle[] = [];
  const waitForHold = async (fifo: string): Promise<FileHandle> => {
    const handle = await open(fifo, "w");
    holding.push(handle);
    return handle;
  };
  const release = async (handle: FileHandle): Promise<void> => {
    holding.splice(holding.indexOf(handle), 1);
    await handle.write("go\n");
    await handle.close();
  };
  try {
    await openApp(page, keel);
    const box = page.getByLabel("Message to keel");
    await box.fill("write a haiku");
    await box.press("Enter");
    const turnHolds = await waitForHold(beforeClose);
    await expect(page.locator(".msg.streaming .live-text")).toHaveText("Autumn moonlight, a worm digs silently into the chestnut.");
    await box.fill("one more thing");
    await box.press("Enter");
    const steerHolds = await waitForHold(beforeDecide);
    await release(turnHolds);
    const endHolds = await waitForHold(beforeComplete);
    await release(steerHolds);
    await expect(page.locator(".status")).toHaveText("Queued: the turn is ending; the input runs next");
    await expect(page.locator(".queue li")).toHaveCount(1);
    await expect(page.locator(".queue li")).toContainText("one more thing");
    expect(refusals).toEqual(["turn.ended"]);
    expect(inputsSent).toEqual(["write a haiku", "one more thing", "one more thing"]);
    await page.screenshot({ path: test.info().outputPath("refused-steer-queued.png") });
    await release(endHolds);
    await expect(page.locator(".msg.assistant .markdown").last()).toHaveText("Here is the one more thing.");
    await expect(page.locator(".queue li")).toHaveCount(0);
    await expect(page.locator(".msg.steer")).toHaveCount(0);
    await expect(page.locator("[data-run-state]")).toHaveAttribute("data-run-state", "completed");
  } finally {
    for (const handle of holding) await handle.close();
    for (const fifo of [beforeClose, beforeDecide, beforeComplete]) releaseLeftoverHold(fifo);
  }
});
