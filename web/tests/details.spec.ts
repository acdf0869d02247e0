// Tool `details` only a graphical view can show, from a real browser run: keel serve --browser (headless
// Chromium) with the scripted model navigating to a local page, taking a snapshot, clicking (which changes
// the page), taking another snapshot (its details carry the diff) and a screenshot (its details carry the
// PNG and the boxes of the last snapshot's refs). The person approves the navigation and the click in the
// page; the test checks that the screenshot loads, that the box drawn over it sits on the element it names
// (its position against the element's place on the page, and the screenshot's pixels under it), and that
// the diff shows what the click changed.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { expectAccessible } from "./a11y";
import { expect, openApp, respond, test, text } from "./keel";

// A page whose one button sits at a known place (CSS px of the viewport) in a colour found nowhere else.
const kButton = { x: 40, y: 120, w: 200, h: 50 };
const kPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Counter</title></head>
<body style="margin: 0; background: #ffffff">
<h1 style="margin: 8px; font-size: 20px">Counter</h1>
<p id="count" style="position: absolute; left: 40px; top: 200px; margin: 0">Count: 0</p>
<button id="add" style="position: absolute; left: ${kButton.x}px; top: ${kButton.y}px; width: ${kButton.w}px; height: ${kButton.h}px; background: #d00000; color: #ffffff; border: none; font-size: 14px">Add one</button>
<script>
let count = 0;
document.getElementById("add").addEventListener("click", () => {
  count += 1;
  document.getElementById("count").textContent = "Count: " + count;
});
</script>
</body></html>`;

/** Serves kPage at every path on 127.0.0.1 (the page the model's browser visits). */
async function servePage(): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
    response.end(kPage);
  });
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((closed) => {
        server.closeAllConnections();
        server.close(() => closed());
      }),
  };
}

const call = (id: string, name: string, args: Record<string, unknown>) => ({ type: "tool_calls", calls: [{ id, name, arguments: args }] });

test("a real browser run: the screenshot loads with the boxes on the elements they name, and the snapshot diff shows the click", async ({ page, keel }) => {
  // Chromium is launched by the first browser tool, and six model steps and two approvals follow.
  test.setTimeout(120_000);
  const site = await servePage();
  try {
    await keel.startModel({
      responses: [
        respond("[counter]", [call("c_nav", "browser_navigate", { url: `${site.origin}/counter.html` })]),
        respond(null, [call("c_snap1", "browser_snapshot", {})]),
        respond(null, [call("c_click", "browser_click", { ref: "e1" })]),
        respond(null, [call("c_snap2", "browser_snapshot", {})]),
        respond(null, [call("c_shot", "browser_screenshot", {})]),
        respond(null, [text("The count is 1 now.")]),
      ],
    });
    // The screenshot tool is offered to a model with vision only.
    await keel.startKeel({}, { config: ["[models.seeing]", `provider = "local"`, "vision = true"], args: ["--browser", "--model", "seeing"] });
    await openApp(page, keel);
    await page.getByLabel("Message to keel").fill("[counter] add one and show me");
    await page.keyboard.press("Enter");
    for (const tool of ["browser_navigate", "browser_click"]) {
      const approval = page.getByRole("group", { name: /Approve/ });
      await expect(approval).toContainText(tool, { timeout: 30_000 });
      await approval.getByRole("button", { name: "Allow once" }).click();
      await expect(approval).toHaveCount(0);
    }
    await expect(page.locator(".msg.assistant .markdown").last()).toHaveText("The count is 1 now.", { timeout: 60_000 });
    await expect(page.locator("[data-run-state]")).toHaveAttribute("data-run-state", "completed");

    await expect(page.getByRole("article", { name: "Tool call browser_click: done" })).toContainText('Clicked e1 (button "Add one")');
    // The first snapshot has nothing to compare with: its card shows no (empty) diff.
    await expect(page.getByRole("article", { name: "Tool call browser_snapshot: done" }).first().locator(".diff")).toHaveCount(0);
    // The second snapshot's details: the diff against the first, coloured.
    const second = page.getByRole("article", { name: "Tool call browser_snapshot: done" }).nth(1);
    await expect(second.locator(".diff .del")).toHaveText(["- Count: 0", '- e1 button "Add one"']);
    await expect(second.locator(".diff .add")).toHaveText(["+ Count: 1", '+ e1 button "Add one" [focused]']);

    const shot = page.getByRole("article", { name: "Tool call browser_screenshot: done" }).locator(".shot");
    const img = shot.locator("img");
    await expect(img).toHaveAttribute("src", /^data:image\/png;base64,/);
    await expect.poll(() => img.evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth > 0)).toBe(true);
    const boxes = shot.locator("svg.boxes rect");
    const count = await boxes.count();
    expect(count).toBeGreaterThan(0);
    await expect(shot.locator("figcaption")).toHaveText(`${count} elements marked`);

    // The box labelled e1 (the button, as the click's report says) is drawn where the button is on the page,
    // scaled from the viewport the details report to the image's size in the card.
    const viewBox = (await shot.locator("svg.boxes").getAttribute("viewBox"))?.split(" ").map(Number) ?? [];
    const viewportWidth = viewBox[2] ?? 0;
    expect(viewportWidth).toBeGreaterThan(0);
    const imgBox = await img.boundingBox();
    const rect = shot.locator("svg.boxes g").filter({ has: page.locator("text", { hasText: /^e1$/ }) }).locator("rect");
    const drawn = await rect.boundingBox();
    expect(imgBox).not.toBeNull();
    expect(drawn).not.toBeNull();
    if (imgBox === null || drawn === null) return;
    const scale = imgBox.width / viewportWidth;
    const expected = { x: imgBox.x + kButton.x * scale, y: imgBox.y + kButton.y * scale, w: kButton.w * scale, h: kButton.h * scale };
    expect(Math.abs(drawn.x - expected.x)).toBeLessThan(1.5);
    expect(Math.abs(drawn.y - expected.y)).toBeLessThan(1.5);
    expect(Math.abs(drawn.width - expected.w)).toBeLessThan(1.5);
    expect(Math.abs(drawn.height - expected.h)).toBeLessThan(1.5);

    // Under the box the screenshot shows the button's red; just left of it, the page's white.
    const pixelAt = (x: number, y: number) =>
      img.evaluate(
        (el: HTMLImageElement, at: { x: number; y: number; box: { x: number; y: number; width: number; height: number } }) => {
          const canvas = document.createElement("canvas");
          canvas.width = el.naturalWidth;
          canvas.height = el.naturalHeight;
          const context = canvas.getContext("2d");
          if (context === null) return [];
          context.drawImage(el, 0, 0);
          const px = Math.floor(((at.x - at.box.x) * el.naturalWidth) / at.box.width);
          const py = Math.floor(((at.y - at.box.y) * el.naturalHeight) / at.box.height);
          return Array.from(context.getImageData(px, py, 1, 1).data);
        },
        { x, y, box: imgBox },
      );
    const inside = await pixelAt(drawn.x + drawn.width * 0.1, drawn.y + drawn.height / 2);
    expect(inside.slice(0, 3)).toEqual([208, 0, 0]);
    const outside = await pixelAt(drawn.x - 10 * scale, drawn.y + drawn.height / 2);
    expect(outside.slice(0, 3)).toEqual([255, 255, 255]);

    await second.screenshot({ path: test.info().outputPath("snapshot-diff.png") });
    await shot.scrollIntoViewIfNeeded();
    await page.screenshot({ path: test.info().outputPath("details.png") });
    await expectAccessible(page, "tool details of a browser run");
  } finally {
    await site.close();
  }
});
