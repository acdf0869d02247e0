// keel dies (SIGKILL) and comes back on the same store and port. Its sessions died with it: the page says
// so and asks for the newly printed link; once that is opened in another tab (renewing the cookie), the page
// reconnects by itself and resynchronises through initialize{subscribe}.
import { expectAccessible } from "./a11y";
import { expect, logInAgain, openApp, respond, test, text } from "./keel";

test("SIGKILL mid-turn: the page reconnects and the recovered turn finishes", async ({ page, keel, context }) => {
  await keel.startModel({ responses: [respond("crash", [text("Partial answer"), { type: "hang" }])] });
  await keel.startKeel();
  await openApp(page, keel);
  await page.getByLabel("Message to keel").fill("crash during this");
  await page.keyboard.press("Enter");
  await expect(page.locator(".msg.streaming .live-text")).toHaveText("Partial answer");
  await keel.kill();
  await expect(page.locator('[data-state="reconnecting"]')).toBeVisible();
  await page.screenshot({ path: test.info().outputPath("reconnecting.png") });
  await keel.startModel({ responses: [respond("crash", [text("Recovered answer.")])] });
  await keel.startKeel();
  await expect(page.getByRole("alert")).toContainText("keel was restarted and no longer knows this page.");
  await page.screenshot({ path: test.info().outputPath("restarted.png") });
  await expectAccessible(page, "restarted");
  await logInAgain(context, keel);
  await expect(page.locator('[data-state="open"]')).toBeVisible();
  await expect(page.locator(".msg.assistant .markdown").last()).toHaveText("Recovered answer.");
  await expect(page.locator("[data-run-state]")).toHaveAttribute("data-run-state", "completed");
});

test("an interrupted turn survives SIGKILL: after the restart the page offers to continue, and Continue finishes it", async ({ page, keel, context }) => {
  await keel.startModel({ responses: [respond("stop me", [text("Starting"), { type: "hang" }])] });
  await keel.startKeel();
  await openApp(page, keel);
  const box = page.getByLabel("Message to keel");
  await box.fill("stop me later");
  await box.press("Enter");
  await expect(page.locator(".msg.streaming .live-text")).toHaveText("Starting");
  await page.getByRole("button", { name: "Stop", exact: true }).click();
  await expect(page.locator("[data-run-state]")).toHaveAttribute("data-run-state", "interrupted");
  await keel.kill();
  await expect(page.locator('[data-state="reconnecting"]')).toBeVisible();
  // The resumed request ends with what keel tells the model about the interrupt: any request gets the reply.
  await keel.startModel({ responses: [respond("", [text("Finished after all.")])] });
  await keel.startKeel();
  await expect(page.locator('[data-state="expired"]')).toBeVisible();
  await logInAgain(context, keel);
  await expect(page.locator('[data-state="open"]')).toBeVisible();
  const offer = page.getByRole("group", { name: "Unfinished task" });
  await expect(offer).toContainText("The task was interrupted.");
  await page.screenshot({ path: test.info().outputPath("continue.png") });
  await expectAccessible(page, "continue after restart");
  await offer.getByRole("button", { name: "Continue" }).click();
  await expect(page.locator(".msg.assistant .markdown").last()).toHaveText("Finished after all.");
  await expect(page.locator("[data-run-state]")).toHaveAttribute("data-run-state", "completed");
  await expect(offer).toHaveCount(0);
});

test("a write cut off by a crash: after the restart the page asks whether it took effect", async ({ page, keel, context }) => {
  await keel.startModel({
    responses: [
      respond("[write]", [{ type: "tool_calls", calls: [{ id: "call_w", name: "write_file", arguments: { path: "w.txt", content: "x" } }] }]),
      respond(null, [text("Noted, it was written.")]),
    ],
  });
  // keel dies (a fail point) right before the approved write runs: its outcome is unknown on restart.
  await keel.startKeel({ KEEL_FAILPOINTS: "tool.execute.before=crash" });
  await openApp(page, keel);
  await page.getByLabel("Message to keel").fill("please [write]");
  await page.keyboard.press("Enter");
  await page.getByRole("group", { name: /Approve/ }).getByRole("button", { name: "Allow once" }).click();
  await keel.exited();
  await keel.startKeel();
  await expect(page.locator('[data-state="expired"]')).toBeVisible();
  await logInAgain(context, keel);
  const card = page.getByRole("group", { name: "Unknown outcome" });
  await expect(card).toBeVisible();
  await expect(card.getByRole("button")).toHaveText(["Retry", "Mark done", "It failed"]);
  await page.screenshot({ path: test.info().outputPath("uncertain.png") });
  await expectAccessible(page, "uncertain write");
  await card.getByRole("button", { name: "Mark done" }).click();
  await expect(card).toHaveCount(0);
  await expect(page.locator(".msg.assistant .markdown").last()).toHaveText("Noted, it was written.");
});
