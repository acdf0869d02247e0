// What the engine waits for: approvals (two tabs, one answer), ask_user questions; tool calls as cards.
import { expectAccessible } from "./a11y";
import { expect, openApp, respond, test, text, writeFile } from "./keel";

test("an approval shows its preview and offers; answered in one tab it disappears from the other", async ({ page, keel, context }) => {
  await keel.startModel({
    responses: [respond("[write]", [writeFile("call_w", "notes/a.txt", "hello from keel\n")]), respond(null, [text("Done writing.")])],
  });
  await keel.startKeel();
  await openApp(page, keel);
  const box = page.getByLabel("Message to keel");
  await box.fill("please [write] a file");
  await box.press("Enter");
  const card = page.getByRole("group", { name: /Approve/ });
  await expect(card).toBeVisible();
  await expect(card.locator(".target")).toContainText("notes/a.txt");
  await expect(card.locator(".diff")).toContainText("+hello from keel");
  // Exactly the decisions keel offers for a workspace write.
  const offered = await card.locator(".actions button").allTextContents();
  expect(offered.length).toBeGreaterThan(0);
  expect(offered.every((o) => ["Allow once", "Allow for this site", "Deny"].includes(o.trim()))).toBe(true);
  await page.screenshot({ path: test.info().outputPath("approval.png") });
  await expectAccessible(page, "approval");

  const other = await context.newPage();
  await openApp(other, keel);
  await other.locator(".thread-open").first().click();
  const otherCard = other.getByRole("group", { name: /Approve/ });
  await expect(otherCard).toBeVisible();
  await expect(other.locator(".thread .badge.attention")).toHaveText("waiting");

  // The other tab's person has the focus on its card: answered here, the card goes away there and the
  // focus goes to that tab's input box, not to <body>.
  await otherCard.getByRole("button", { name: "Deny" }).focus();

  // By keyboard, with a visible focus ring.
  const allow = card.getByRole("button", { name: "Allow once" });
  await allow.focus();
  expect(await allow.evaluate((b) => getComputedStyle(b).outlineStyle)).toBe("solid");
  await page.keyboard.press("Enter");
  await expect(otherCard).toHaveCount(0);
  await expect(card).toHaveCount(0);
  await expect(other.getByRole("textbox", { name: "Message to keel" })).toBeFocused();
  for (const p of [page, other]) {
    await expect(p.locator(".msg.assistant .markdown").last()).toHaveText("Done writing.");
    await expect(p.locator(".tool-card.done .tool-name")).toHaveText("write_file");
  }
  await page.locator(".tool-card summary").first().click();
  await expect(page.locator(".tool-card pre").first()).toContainText('"path": "notes/a.txt"');
  await page.screenshot({ path: test.info().outputPath("tool-card.png") });
  await expectAccessible(page, "transcript with a tool card");
});

test("ask_user appears as a form; the answer goes back to the model", async ({ page, keel }) => {
  await keel.startModel({
    responses: [
      respond("[ask]", [{ type: "tool_calls", calls: [{ id: "call_q", name: "ask_user", arguments: { question: "Which colour?", choices: ["red", "blue"] } }] }]),
      respond("blue", [text("Blue it is.")]),
    ],
  });
  await keel.startKeel();
  await openApp(page, keel);
  await page.getByLabel("Message to keel").fill("[ask] me");
  await page.keyboard.press("Enter");
  const form = page.getByRole("group", { name: "The agent asks" });
  await expect(form).toContainText("Which colour?");
  await expectAccessible(page, "ask_user");
  await form.getByLabel("Your answer").fill("blue");
  await form.getByRole("button", { name: "Answer" }).click();
  await expect(form).toHaveCount(0);
  await expect(page.locator(".msg.assistant .markdown").last()).toHaveText("Blue it is.");
});

test("a timer shows when it fires, then the turn goes on", async ({ page, keel }) => {
  await keel.startModel({
    responses: [
      respond("[timer]", [{ type: "tool_calls", calls: [{ id: "call_t", name: "set_timer", arguments: { seconds: 2 } }] }]),
      respond(null, [text("Time is up.")]),
    ],
  });
  await keel.startKeel();
  await openApp(page, keel);
  await page.getByLabel("Message to keel").fill("[timer] please");
  await page.keyboard.press("Enter");
  const timer = page.getByRole("group", { name: "Timer" });
  await expect(timer).toContainText("The agent waits until");
  await expect(timer).toHaveCount(0);
  await expect(page.locator(".msg.assistant .markdown").last()).toHaveText("Time is up.");
});
