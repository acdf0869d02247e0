// Tool `details` only a graphical view can show: a screenshot with the snapshot's boxes drawn over it, and a
// diff. A browser run is not needed to show them: a stand-in for keel's WebSocket (Playwright's
// routeWebSocket) serves a thread whose nodes have keel's shapes.
import { expectAccessible } from "./a11y";
import { answerFromStandIn, expect, standInUrl, test } from "./keel";

// A 2x2 PNG.
const kPng = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==";

test("a screenshot result shows its image with the ref boxes over it, and a diff is coloured", async ({ page, keel }) => {
  const nodes = [
    { id: "n1", kind: "user_message", runId: "r1", body: { content: [{ type: "text", text: "look" }] } },
    { id: "n2", kind: "tool_call", runId: "r1", body: { toolCallId: "c1", name: "browser_screenshot", arguments: { tab: 1 } } },
    {
      id: "n3",
      kind: "tool_result",
      runId: "r1",
      body: {
        role: "tool",
        toolCallId: "c1",
        content: [{ type: "text", text: "Screenshot of tab 1" }],
        details: {
          kind: "browser.screenshot",
          tab: 1,
          format: "png",
          png: kPng,
          viewport: { width: 800, height: 600 },
          boxes: [
            { ref: "e1", x: 10, y: 20, w: 100, h: 30 },
            { ref: "e2", x: 200, y: 300, w: 50, h: 50 },
          ],
        },
      },
    },
    { id: "n4", kind: "tool_call", runId: "r1", body: { toolCallId: "c2", name: "edit_file", arguments: { path: "a.txt" } } },
    {
      id: "n5",
      kind: "tool_result",
      runId: "r1",
      body: { role: "tool", toolCallId: "c2", content: [{ type: "text", text: "edited" }], details: { diff: "@@ line 1 @@\n-old\n+new" } },
    },
  ];
  const results: Record<string, unknown> = {
    initialize: { protocolVersion: 1, unfinished: [] },
    "thread.list": { threads: [{ threadId: "t1", title: "Shots", revision: 1, leafNodeId: "n5", parentThreadId: null, updatedAt: 1 }] },
    "policy.read": { defaultMode: "ask_writes", threadModes: {}, rules: [], hostPermissions: [] },
    "thread.read": { threadId: "t1", title: "Shots", revision: 1, leafNodeId: "n5", nodes, latestRun: null, lastSeq: 0 },
    "queue.list": { threadId: "t1", items: [], revision: 1, lastSeq: 0 },
  };
  await answerFromStandIn(page, results);
  await keel.startKeel();
  await page.goto(standInUrl(keel));
  await page.locator('[data-state="open"]').waitFor();
  await page.locator(".thread-open").first().click();
  const shot = page.locator(".tool-card .shot");
  await expect(shot.locator("img")).toHaveAttribute("src", /^data:image\/png;base64,/);
  await expect(shot.locator("svg.boxes rect")).toHaveCount(2);
  await expect(shot.locator("svg.boxes text")).toHaveText(["e1", "e2"]);
  await expect(shot.locator("figcaption")).toHaveText("2 elements marked");
  await expect(page.locator(".tool-card .diff .add")).toHaveText("+new\n");
  await expect(page.locator(".tool-card .diff .del")).toHaveText("-old\n");
  await page.screenshot({ path: test.info().outputPath("details.png") });
  await expectAccessible(page, "tool details");
});
