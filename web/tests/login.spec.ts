// The page's login against keel's own server (docs/web.md, The page's login): the printed one-time URL, the
// session cookie, the refusals, and the Content-Security-Policy the page runs under.
import { request as httpRequest } from "node:http";
import { expectAccessible } from "./a11y";
import { expect, openApp, respond, test, text, type KeelHarness } from "./keel";

/** The status keel answers a WebSocket upgrade on /rpc with (101 when it accepts), sent from Node so that
 * the test, unlike a page, can set the Origin and read the status. */
function upgradeStatus(keel: KeelHarness, origin: string, cookie: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: "127.0.0.1",
      port: keel.port,
      path: "/rpc",
      headers: {
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        Origin: origin,
        Cookie: cookie,
      },
    });
    req.on("upgrade", (response, socket) => {
      socket.destroy();
      resolve(response.statusCode ?? 0);
    });
    req.on("response", (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

test("the printed URL logs in and leaves the address bar; a reload and a second tab keep the session", async ({ page, keel, context }) => {
  await keel.startKeel();
  expect(keel.printedUrl).toMatch(/#token=[0-9a-f]{64}$/);
  await openApp(page, keel);
  expect(page.url()).toBe(`${keel.origin}/`);
  const cookies = await context.cookies(keel.origin);
  const session = cookies.find((c) => c.name === `keel_session_${keel.port}`);
  expect(session?.httpOnly).toBe(true);
  expect(session?.sameSite).toBe("Strict");

  await page.reload();
  await expect(page.locator('[data-state="open"]')).toBeVisible();

  const second = await context.newPage();
  await second.goto(`${keel.origin}/`);
  await expect(second.locator('[data-state="open"]')).toBeVisible();
});

test("the one-time URL works once: opened again in a fresh browser it is refused and the page says what to do", async ({ page, keel, browser }) => {
  await keel.startKeel();
  await openApp(page, keel);
  const fresh = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  try {
    const other = await fresh.newPage();
    await other.goto(keel.printedUrl);
    const alert = other.getByRole("alert");
    await expect(alert).toContainText("Open the link keel printed (the one with #token=…)");
    await expect(alert).toHaveAttribute("data-state", "refused");
    expect(other.url()).toBe(`${keel.origin}/`);
    expect(await fresh.cookies(keel.origin)).toEqual([]);
    await other.screenshot({ path: test.info().outputPath("refused.png") });
    await expectAccessible(other, "refused login");
  } finally {
    await fresh.close();
  }
  // The page that used the link is still in.
  await expect(page.locator('[data-state="open"]')).toBeVisible();
});

test("a page of another origin cannot open keel's WebSocket, even with the session cookie", async ({ page, keel, context }) => {
  await keel.startKeel();
  await openApp(page, keel);
  const cookie = (await context.cookies(keel.origin)).map((c) => `${c.name}=${c.value}`).join("; ");
  // What keel answers: 101 for its own Origin with the cookie (so this test can fail), 403 for another.
  expect(await upgradeStatus(keel, keel.origin, cookie)).toBe(101);
  expect(await upgradeStatus(keel, "http://elsewhere.test", cookie)).toBe(403);

  // And from a real page of another origin (served by Playwright, never by the network).
  await context.route("http://elsewhere.test/**", (route) =>
    route.fulfill({ status: 200, contentType: "text/html", body: "<!doctype html><title>elsewhere</title>" }),
  );
  const foreign = await context.newPage();
  await foreign.goto("http://elsewhere.test/");
  const outcome = await foreign.evaluate(
    (url) =>
      new Promise<string>((resolve) => {
        const socket = new WebSocket(url);
        socket.onopen = () => resolve("open");
        socket.onclose = (event) => resolve(`closed ${event.code}`);
      }),
    `ws://127.0.0.1:${keel.port}/rpc`,
  );
  expect(outcome).toBe("closed 1006");
});

test("keel's CSP header and the page's own agree, and nothing the app does is blocked", async ({ page, keel }) => {
  await keel.startModel({
    responses: [respond("policy", [text("# Heading\n\nSome **bold** text, a [link](https://example.com/) and code:\n\n```ts\nconst x = 1;\n```\n", 20)])],
  });
  await keel.startKeel();
  const problems: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") problems.push(`console ${message.type()}: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  await page.exposeFunction("reportViolation", (what: string) => problems.push(`CSP violation: ${what}`));
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (event) => {
      void (window as unknown as { reportViolation: (what: string) => Promise<void> }).reportViolation(
        `${event.effectiveDirective} blocked ${event.blockedURI}`,
      );
    });
  });

  const response = await page.goto(keel.url());
  await expect(page.locator('[data-state="open"]')).toBeVisible();
  const parse = (policy: string) =>
    new Map(
      policy
        .split(";")
        .map((d) => d.trim().split(/\s+/))
        .filter((d) => d[0] !== "")
        .map((d) => [d[0] ?? "", d.slice(1).join(" ")]),
    );
  const header = parse(response?.headers()["content-security-policy"] ?? "");
  const meta = parse((await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute("content")) ?? "");
  // The same directives with the same sources, except: connect-src (keel names its own ws://HOST:PORT, which
  // the built file cannot know; the page allows ws: for the ?rpc= override), frame-ancestors (ignored in a
  // <meta>, so only the header has it) and form-action (only the page has it: no form of the app submits).
  expect(header.get("connect-src")).toBe(`'self' ws://127.0.0.1:${keel.port}`);
  expect(meta.get("connect-src")).toBe("'self' ws: wss:");
  expect(header.get("frame-ancestors")).toBe("'none'");
  expect(meta.get("form-action")).toBe("'none'");
  for (const name of ["connect-src", "frame-ancestors", "form-action"]) {
    header.delete(name);
    meta.delete(name);
  }
  expect(Object.fromEntries(meta)).toEqual(Object.fromEntries(header));

  // A turn that streams and renders Markdown, code and a link; a second tab; a reload.
  const box = page.getByLabel("Message to keel");
  await box.fill("show the policy");
  await box.press("Enter");
  await expect(page.locator(".msg.assistant .markdown pre code")).toHaveText("const x = 1;");
  await page.reload();
  await page.locator(".thread-open").first().click();
  await expect(page.locator(".msg.assistant .markdown h1")).toHaveText("Heading");
  expect(problems).toEqual([]);
});
