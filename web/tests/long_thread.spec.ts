// A long thread is windowed (docs/web.md, Streaming and long threads): it opens at its end with only its
// newest messages rendered, renders older ones as the person scrolls up (keeping what is on screen in
// place) or presses "Show earlier messages", and renders everything before the browser's find-in-page.
import { expectAccessible } from "./a11y";
import { answerFromStandIn, expect, standInUrl, test } from "./keel";

const kMessages = 600;

test("a long thread opens at its end, grows upwards as the person scrolls, and renders whole for find-in-page", async ({ page, keel }) => {
  const nodes = [];
  for (let i = 0; i < kMessages / 2; i++) {
    nodes.push({ id: `u${i}`, kind: "user_message", runId: `r${i}`, body: { content: [{ type: "text", text: `Question ${i}?` }] } });
    nodes.push({ id: `a${i}`, kind: "assistant_message", runId: `r${i}`, body: { content: [{ type: "text", text: `Answer **${i}**` }] } });
  }
  const last = kMessages / 2 - 1;
  await answerFromStandIn(page, {
    initialize: { protocolVersion: 1, unfinished: [] },
    "thread.list": { threads: [{ threadId: "t1", title: "Long thread", revision: 1, parentThreadId: null, updatedAt: 1 }] },
    "policy.read": { defaultMode: "ask_writes", threadModes: {}, rules: [], hostPermissions: [] },
    "thread.read": { threadId: "t1", title: "Long thread", revision: 1, leafNodeId: `a${last}`, nodes, latestRun: null, lastSeq: 0 },
    "queue.list": { threadId: "t1", items: [], revision: 1, lastSeq: 0 },
  });
  await keel.startKeel();
  await page.goto(standInUrl(keel));
  await page.locator('[data-state="open"]').waitFor();
  await page.locator(".thread-open").first().click();

  // At its end, with only the newest messages rendered.
  const messages = page.locator(".transcript .msg");
  await expect(messages.last()).toContainText(`Answer ${last}`);
  await expect(messages.last()).toBeInViewport();
  const firstCount = await messages.count();
  expect(firstCount).toBeLessThan(kMessages);
  const earlier = page.getByRole("button", { name: /Show earlier messages/ });
  await expect(earlier).toHaveText(`Show earlier messages (${kMessages - firstCount} more)`);
  await expectAccessible(page, "long thread");

  // Scrolled to the top, older messages come in above and the one that was at the top stays where it was.
  const oldest = (kMessages - firstCount) / 2;
  const top = page.locator(".transcript .msg", { hasText: `Question ${oldest}?` });
  const before = await page.evaluate(() => {
    document.querySelector(".scroll")!.scrollTop = 0;
    return [...document.querySelectorAll(".transcript .msg")][0]!.getBoundingClientRect().top;
  });
  await expect.poll(() => messages.count()).toBeGreaterThan(firstCount);
  const after = await top.evaluate((element) => element.getBoundingClientRect().top);
  expect(Math.abs(after - before)).toBeLessThan(2);
  await expect(page.locator(".transcript .msg", { hasText: `Question ${oldest - 1}?` })).toBeAttached();

  // By keyboard: the button renders the next older ones and keeps the focus.
  const grown = await messages.count();
  await earlier.focus();
  await page.keyboard.press("Enter");
  await expect.poll(() => messages.count()).toBeGreaterThan(grown);
  await expect(earlier).toBeFocused();

  // Ctrl+F: the browser's find-in-page sees every message.
  await page.keyboard.press("Control+f");
  await expect(messages).toHaveCount(kMessages);
  await expect(earlier).toHaveCount(0);
  await expect(page.locator(".transcript .msg").first()).toContainText("Question 0?");
});
