// A turn streams into the transcript; model text is rendered as Markdown without ever becoming HTML.
import { expect, openApp, respond, test, text } from "./keel";

test("a turn streams its reply, then shows it as Markdown with its token usage and cost", async ({ page, keel }) => {
  await keel.startModel({
    responses: [
      respond(
        "hello",
        [
          { type: "reasoning", text: "The user greets me.", chunk_size: 4 },
          text("Hello **world**, here is code:\n\n```\nlet x = 1;\n```\n", 3),
        ],
        { chunk_delay_ms: 15, usage: { input_tokens: 1000, output_tokens: 200 } },
      ),
      respond("again", [text("Again.")], { usage: { input_tokens: 2000, output_tokens: 100 } }),
    ],
  });
  await keel.startKeel();
  await openApp(page, keel);
  await page.getByLabel("Message to keel").fill("hello keel");
  await page.keyboard.press("Enter");
  // While it streams, the partial text is shown live.
  await expect(page.locator(".msg.streaming .live-text")).toContainText("Hello");
  await page.screenshot({ path: test.info().outputPath("streaming.png") });
  const reply = page.locator(".msg.assistant:not(.streaming)");
  await expect(reply.locator("strong")).toHaveText("world");
  await expect(reply.locator("pre code")).toHaveText("let x = 1;\n");
  // Reasoning is collapsed.
  await expect(reply.locator("details.reasoning")).not.toHaveAttribute("open", "");
  await expect(page.locator(".usage")).toContainText("1000 in · 200 out · $0.0060");
  await expect(page.locator("[data-run-state]")).toHaveAttribute("data-run-state", "completed");
  await expect(page.locator(".thread-open")).toHaveCount(1);
  await page.screenshot({ path: test.info().outputPath("reply.png") });

  // A second turn, then a reload: every turn's usage and cost come back from keel, not only the last's.
  await page.getByLabel("Message to keel").fill("again");
  await page.keyboard.press("Enter");
  const usageLines = page.locator(".usage");
  await expect(usageLines).toHaveCount(2);
  await expect(usageLines.nth(1)).toContainText("2000 in · 100 out · $0.0075");
  await page.reload();
  await page.locator(".thread-open").first().click();
  await expect(usageLines).toHaveCount(2);
  await expect(usageLines.nth(0)).toContainText("1000 in · 200 out · $0.0060");
  await expect(usageLines.nth(1)).toContainText("2000 in · 100 out · $0.0075");
});

test("a reply holding <script> and <img onerror> renders as inert text", async ({ page, keel }) => {
  const hostile =
    'Look: <script>window.__pwned = 1</script> and <img src=x onerror="window.__pwned = 2"> and ' +
    '[click](javascript:window.__pwned=3) and ![i](http://127.0.0.1:9/track.png)';
  await keel.startModel({ responses: [respond("inject", [text(hostile)])] });
  await keel.startKeel();
  await openApp(page, keel);
  await page.getByLabel("Message to keel").fill("inject <b>me</b>");
  await page.keyboard.press("Enter");
  const reply = page.locator(".msg.assistant:not(.streaming) .markdown");
  await expect(reply).toContainText("<script>window.__pwned = 1</script>");
  await expect(reply).toContainText('<img src=x onerror="window.__pwned = 2">');
  await expect(reply.locator("script, img, a[href^='javascript']")).toHaveCount(0);
  await expect(page.locator(".msg.user .plain")).toHaveText("inject <b>me</b>");
  expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
});
