// The one place that starts what the browser tests talk to: the scripted model server (docs/model-server.md)
// and a real `keel serve --listen` with a token file, which serves the built app (web/dist) itself and prints
// the one-time `#token=` URL the page logs in with. Everything is started per test and killed by pid.
import { test as base, type BrowserContext, type Page } from "@playwright/test";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const webRoot = resolve(import.meta.dirname, "..");
export const keelBin = process.env["KEEL_BIN"] ?? resolve(webRoot, "../build/keel");
export const modelServerBin =
  process.env["KEEL_MODEL_SERVER_BIN"] ?? resolve(webRoot, "../build/src/model_server/keel-model-server");
const uiDir = join(webRoot, "dist");

/** Resolves with the first match of `pattern` in what the process writes to `stream`. */
function waitForOutput(child: ChildProcess, stream: "stdout" | "stderr", pattern: RegExp, what: string): Promise<RegExpMatchArray> {
  return new Promise((resolvePromise, reject) => {
    let seen = "";
    const source = child[stream];
    if (source === null) {
      reject(new Error(`${what}: no ${stream}`));
      return;
    }
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const found = seen.match(pattern);
      if (found !== null) {
        source.off("data", onData);
        resolvePromise(found);
      }
    };
    source.on("data", onData);
    child.once("exit", (code) => reject(new Error(`${what} exited (${code}) before it was ready:\n${seen}`)));
  });
}

export type Script = { responses: unknown[] };

export class KeelHarness {
  readonly dir = mkdtempSync(join(tmpdir(), "keel-web-"));
  private model: ChildProcess | null = null;
  /** more scripted model servers, each configured as its own provider and model (addModel) */
  private extraModels: { name: string; child: ChildProcess; url: string }[] = [];
  private keel: ChildProcess | null = null;
  private modelUrl = "";
  port = 0;
  log = "";
  /** the URL keel printed on its last start (`http://127.0.0.1:PORT/#token=<one-time>`) */
  printedUrl = "";
  /** whether a page has opened printedUrl since (its token works once) */
  private loggedIn = false;

  constructor() {
    mkdirSync(join(this.dir, "workspace"));
    mkdirSync(join(this.dir, "home"));
  }

  /** Starts (or replaces, on the same port: keel's environment snapshot holds the provider's URL) the
   * scripted model server. */
  async startModel(script: Script): Promise<void> {
    await this.stopModel();
    const file = join(this.dir, `script-${Date.now()}.json`);
    writeFileSync(file, JSON.stringify(script));
    const port = this.modelUrl === "" ? "0" : new URL(this.modelUrl).port;
    const child = spawn(modelServerBin, ["--script", file, "--port", port, "--max-seconds", "600"], { stdio: ["ignore", "pipe", "pipe"] });
    this.model = child;
    const found = await waitForOutput(child, "stdout", /listening on 127\.0\.0\.1:(\d+)/, "keel-model-server");
    this.modelUrl = `http://127.0.0.1:${found[1]}`;
  }

  /** Starts one more scripted model server, configured at keel's next start as provider and model `name`
   * (the first one, startModel's, stays the default model "scripted"). */
  async addModel(name: string, script: Script): Promise<void> {
    const file = join(this.dir, `script-${name}.json`);
    writeFileSync(file, JSON.stringify(script));
    const child = spawn(modelServerBin, ["--script", file, "--port", "0", "--max-seconds", "600"], { stdio: ["ignore", "pipe", "pipe"] });
    const found = await waitForOutput(child, "stdout", /listening on 127\.0\.0\.1:(\d+)/, `keel-model-server ${name}`);
    this.extraModels.push({ name, child, url: `http://127.0.0.1:${found[1]}` });
  }

  /** Starts keel serve on this test's store (again after kill(): same store, same port, same token file).
   * Without startModel() first, the provider points at a closed port (tests whose page talks to a stand-in).
   * `more.config`: TOML lines appended to keel.toml (tables of their own); `more.args`: more `serve` arguments. */
  async startKeel(extraEnv: Record<string, string> = {}, more: { config?: string[]; args?: string[] } = {}): Promise<void> {
    const modelUrl = this.modelUrl === "" ? "http://127.0.0.1:9" : this.modelUrl;
    const config = join(this.dir, "keel.toml");
    writeFileSync(
      config,
      [
        `data_dir = "${join(this.dir, "data")}"`,
        `default_model = "scripted"`,
        `[providers.local]`,
        `kind = "openai-chat"`,
        `base_url = "${modelUrl}/v1"`,
        `max_retries = 2`,
        `[models.scripted]`,
        `provider = "local"`,
        `price = { input = 3.0, output = 15.0 }`,
        ...this.extraModels.flatMap((m) => [
          `[providers.${m.name}]`,
          `kind = "openai-chat"`,
          `base_url = "${m.url}/v1"`,
          `[models.${m.name}]`,
          `provider = "${m.name}"`,
        ]),
        ...(more.config ?? []),
        ``,
      ].join("\n"),
    );
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (v === undefined || k.startsWith("KEEL_") || k.toLowerCase().endsWith("_proxy")) continue;
      env[k] = v;
    }
    env["HOME"] = join(this.dir, "home");
    env["XDG_CONFIG_HOME"] = join(this.dir, "home", "config");
    env["XDG_DATA_HOME"] = join(this.dir, "home", "data");
    Object.assign(env, extraEnv);
    const portFile = join(this.dir, "port");
    rmSync(portFile, { force: true });
    const args = [
      ...["--config", config, "serve", "--listen", `127.0.0.1:${this.port}`, "--port-file", portFile],
      ...["--token-file", join(this.dir, "token"), "--ui-dir", uiDir, "--workspace", join(this.dir, "workspace")],
      ...(more.args ?? []),
    ];
    const child = spawn(keelBin, args, { stdio: ["ignore", "ignore", "pipe"], env });
    this.keel = child;
    child.stderr?.on("data", (chunk: Buffer) => (this.log += chunk.toString()));
    // serve writes the port file, says it listens, then prints the page's URL (log lines may interleave:
    // only the URL itself is looked for).
    const found = await waitForOutput(child, "stderr", /keel: web interface (http:\/\/127\.0\.0\.1:\d+\/#token=[0-9a-f]{64})\n/, "keel serve");
    this.port = Number(readFileSync(portFile, "utf8").trim());
    this.printedUrl = found[1] ?? "";
    this.loggedIn = false;
  }

  /** keel's own origin: the page, its assets and the WebSocket (/rpc). */
  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The URL a page of this test's browser context opens: the printed one-time URL the first time after
   * each start of keel, then keel's plain origin (the context holds the session cookie). */
  url(): string {
    if (this.loggedIn) return `${this.origin}/`;
    this.loggedIn = true;
    return this.printedUrl;
  }

  /** Resolves when keel exits by itself (a fail point that crashes it). */
  exited(): Promise<void> {
    const child = this.keel;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((done) => child.once("exit", () => done()));
  }

  /** SIGKILL: the process dies mid-whatever, as on a crash. */
  async kill(): Promise<void> {
    const child = this.keel;
    this.keel = null;
    if (child === null || child.exitCode !== null) return;
    const exited = new Promise((done) => child.once("exit", done));
    child.kill("SIGKILL");
    await exited;
  }

  private async stopModel(): Promise<void> {
    const child = this.model;
    this.model = null;
    if (child === null || child.exitCode !== null) return;
    const exited = new Promise((done) => child.once("exit", done));
    child.kill("SIGTERM");
    await exited;
  }

  async stop(): Promise<void> {
    const child = this.keel;
    this.keel = null;
    if (child !== null && child.exitCode === null) {
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGTERM");
      // A keel held at a fail point (a test that failed before releasing it) waits for the hold at
      // shutdown: after a grace period it is killed, so a failed test cannot hang the suite.
      const grace = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(grace);
    }
    await this.stopModel();
    for (const { child } of this.extraModels.splice(0)) {
      if (child.exitCode !== null) continue;
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Opens the app from keel (logging in with the printed URL when the context has no session yet) and waits
 * until it is connected. */
export async function openApp(page: Page, harness: KeelHarness): Promise<void> {
  await page.goto(harness.url());
  await page.locator('[data-state="open"]').waitFor();
}

/** After keel restarted (sessions live as long as its process): what a person does, opening the newly
 * printed URL in another tab of the same browser, which renews the cookie for every tab; then closes it. */
export async function logInAgain(context: BrowserContext, harness: KeelHarness): Promise<void> {
  const tab = await context.newPage();
  await openApp(tab, harness);
  await tab.close();
}

/** The app served by keel, talking through the documented `?rpc=` override to a stand-in for keel's
 * WebSocket on keel's own port (so the header's connect-src allows it): Playwright's routeWebSocket
 * answers it, keel never sees it. */
export function standInUrl(harness: KeelHarness): string {
  return `${harness.origin}/?rpc=${encodeURIComponent(`ws://127.0.0.1:${harness.port}/stand-in`)}`;
}

/** Makes the stand-in of standInUrl() answer each request with `results[method]` (`{}` for any other), as
 * keel would for a thread it already holds. */
export async function answerFromStandIn(page: Page, results: Record<string, unknown>): Promise<void> {
  await page.routeWebSocket(/\/stand-in/, (ws) => {
    ws.onMessage((message) => {
      const request = JSON.parse(String(message)) as { id: number; method: string };
      ws.send(JSON.stringify({ jsonrpc: "2.0", id: request.id, result: results[request.method] ?? {} }));
    });
  });
}

export const test = base.extend<{ keel: KeelHarness }>({
  keel: async ({}, use) => {
    const harness = new KeelHarness();
    await use(harness);
    await harness.stop();
  },
});

export { expect } from "@playwright/test";

// Script helpers (docs/model-server.md).
export const text = (t: string, chunk_size = 0) => (chunk_size > 0 ? { type: "text", text: t, chunk_size } : { type: "text", text: t });
export const respond = (match: string | null, steps: unknown[], extra: Record<string, unknown> = {}) =>
  match === null ? { steps, ...extra } : { match, steps, ...extra };
export const writeFile = (id: string, path: string, content: string) => ({
  type: "tool_calls",
  calls: [{ id, name: "write_file", arguments: { path, content } }],
});
