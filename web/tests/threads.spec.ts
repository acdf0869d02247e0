// The thread list and tree: titles, search, fork at a message, switching, delete; the policy mode.
import { expectAccessible } from "./a11y";
import { expect, openApp, respond, test, text } from "./keel";

test("threads can be searched, forked at a message, switched and deleted", async ({ page, keel }) => {
  await keel.startModel({ responses: [respond("apples", [text("Apples are red.")]), respond("pears", [text("Pears are green.")])] });
  await keel.startKeel();
  await openApp(page, keel);
  await expectAccessible(page, "empty");
  const box = page.getByLabel("Message to keel");
  await box.fill("tell me about apples");
  await box.press("Enter");
  await expect(page.locator(".msg.assistant .markdown")).toHaveText("Apples are red.");
  await page.getByRole("button", { name: "New thread" }).click();
  await box.fill("tell me about pears");
  await box.press("Enter");
  await expect(page.locator(".msg.assistant .markdown")).toHaveText("Pears are green.");
  const threads = page.getByRole("navigation", { name: "Threads" });
  await expect(threads.locator(".thread-open")).toHaveCount(2);

  await page.getByLabel("Search threads").fill("apple");
  await expect(threads.locator(".thread-open")).toHaveCount(1);
  await page.getByLabel("Search threads").fill("");
  await expect(threads.locator(".thread-open")).toHaveCount(2);

  // Switch back to the apples thread and fork it at the user's message.
  await threads.getByRole("button", { name: /apples/ }).first().click();
  await expect(page.locator(".msg.assistant .markdown")).toHaveText("Apples are red.");
  await page.locator(".msg.user").getByRole("button", { name: "Fork the thread at this message" }).click();
  await expect(threads.locator(".thread-open")).toHaveCount(3);
  await expect(threads.locator("ul ul .thread-open")).toHaveCount(1);
  await expect(threads.locator("ul ul .thread-open")).toHaveAttribute("aria-current", "true");
  await expect(page.locator(".msg.user .plain")).toHaveText("tell me about apples");
  await expect(page.locator(".msg.assistant")).toHaveCount(0);
  await page.screenshot({ path: test.info().outputPath("fork.png") });
  await expectAccessible(page, "thread tree");

  // Policy mode for this thread.
  await page.getByLabel("Policy").selectOption("read_only");
  await expect(page.getByLabel("Policy")).toHaveValue("read_only");

  // Delete the pears thread (two steps: the trash button, then "Delete?").
  await threads.getByRole("button", { name: /Delete thread .*pears/ }).click();
  await threads.getByRole("button", { name: "Delete?" }).click();
  await expect(threads.locator(".thread-open")).toHaveCount(2);
  await expect(threads.getByRole("button", { name: /pears/ })).toHaveCount(0);
});

test("the page says how to get in when keel refuses it", async ({ page, keel }) => {
  // keel's page opened without the printed link: no session cookie, so keel refuses the WebSocket.
  await keel.startKeel();
  await page.goto(`${keel.origin}/`);
  await expect(page.getByRole("alert")).toContainText("Open the link keel printed (the one with #token=…)");
  await expectAccessible(page, "refused");
});
