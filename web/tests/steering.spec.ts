// The input box stays live during a turn: Enter steers it, Queue queues, entries can be removed, Esc stops.
import { expectAccessible } from "./a11y";
import { expect, openApp, respond, test, text } from "./keel";

test("Enter during a turn steers it: the steer joins the turn and the model answers it", async ({ page, keel }) => {
  await keel.startModel({
    responses: [
      respond("also mention cats", [text("Cats noted.")]),
      respond("long task", [text("Working on it. "), { type: "delay", ms: 1500 }, text("Still working.")]),
    ],
  });
  await keel.startKeel();
  await openApp(page, keel);
  const box = page.getByLabel("Message to keel");
  await box.fill("a long task");
  await box.press("Enter");
  await expect(page.locator(".msg.streaming .live-text")).toContainText("Working on it.");
  await box.fill("also mention cats");
  await box.press("Enter");
  await expect(page.locator(".status")).toHaveText("Sent to the running turn (steer)");
  await expect(page.locator(".msg.steer")).toContainText("also mention cats");
  await expect(page.locator(".msg.assistant .markdown").last()).toHaveText("Cats noted.");
  await expect(page.locator("[data-run-state]")).toHaveAttribute("data-run-state", "completed");
  await page.screenshot({ path: test.info().outputPath("steered.png") });
});

test("Queue holds inputs during a turn, an entry can be removed, and Esc interrupts the turn", async ({ page, keel }) => {
  await keel.startModel({ responses: [respond("hang please", [text("Thinking"), { type: "hang" }])] });
  await keel.startKeel();
  await openApp(page, keel);
  const box = page.getByLabel("Message to keel");
  await box.fill("hang please");
  await box.press("Enter");
  await expect(page.locator(".msg.streaming .live-text")).toHaveText("Thinking");
  await box.fill("first queued");
  await page.getByRole("button", { name: "Queue" }).click();
  await expect(page.locator(".queue li")).toHaveCount(1);
  await box.fill("second queued");
  await box.press("Shift+Alt+Enter");
  await expect(page.locator(".queue li")).toHaveCount(2);
  await expect(page.getByRole("heading", { name: "Queued (2 of 8)" })).toBeVisible();
  await page.screenshot({ path: test.info().outputPath("queue.png") });
  await expectAccessible(page, "running turn with a queue");
  await page.getByRole("button", { name: "Remove queued: first queued" }).click();
  await expect(page.locator(".queue li")).toHaveCount(1);
  await expect(page.locator(".queue li")).toContainText("second queued");
  await box.press("Escape");
  await expect(page.locator("[data-run-state]")).toHaveAttribute("data-run-state", "interrupted");
  // After an interrupt the queue holds (docs/protocol.md, turn.enqueue) and the turn can be continued.
  await expect(page.locator(".queue li")).toHaveCount(1);
  await expect(page.getByText("The task was interrupted.")).toBeVisible();
  await expectAccessible(page, "interrupted turn");
});
