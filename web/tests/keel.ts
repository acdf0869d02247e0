// The one place that starts what the browser tests talk to: a static server for web/dist (until keel serves
// the assets itself), the scripted model server (docs/model-server.md) and a real `keel serve --listen`
// allowed to be reached from the static server's origin. Everything is started per test and killed by pid.
import { test as base, type Page } from "@playwright/test";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { extname, join, normalize, resolve } from "node:path";

const webRoot = resolve(import.meta.dirname, "..");
export const keelBin = process.env["KEEL_BIN"] ?? resolve(webRoot, "../build/keel");
export const modelServerBin =
  process.env["KEEL_MODEL_SERVER_BIN"] ?? resolve(webRoot, "../build/src/model_server/keel-model-server");

const kTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/** Serves web/dist on 127.0.0.1:<free port>. */
async function startStatic(): Promise<{ origin: string; server: Server }> {
  const dist = join(webRoot, "dist");
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const file = normalize(join(dist, path === "/" ? "index.html" : path));
    if (!file.startsWith(dist) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": kTypes[extname(file)] ?? "application/octet-stream" });
    res.end(readFileSync(file));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("static server has no port");
  return { origin: `http://127.0.0.1:${address.port}`, server };
}

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
  private keel: ChildProcess | null = null;
  private modelUrl = "";
  port = 0;
  log = "";

  constructor(readonly staticOrigin: string) {
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

  /** Starts keel serve on this test's store (again after kill(): same store, same port). */
  async startKeel(extraEnv: Record<string, string> = {}): Promise<void> {
    const config = join(this.dir, "keel.toml");
    writeFileSync(
      config,
      [
        `data_dir = "${join(this.dir, "data")}"`,
        `default_model = "scripted"`,
        `[providers.local]`,
        `kind = "openai-chat"`,
        `base_url = "${this.modelUrl}/v1"`,
        `max_retries = 2`,
        `[models.scripted]`,
        `provider = "local"`,
        `price = { input = 3.0, output = 15.0 }`,
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
    const args = ["--config", config, "serve", "--listen", `127.0.0.1:${this.port}`, "--port-file", portFile, "--no-token", "--allow-origin", this.staticOrigin, "--workspace", join(this.dir, "workspace")];
    const child = spawn(keelBin, args, { stdio: ["ignore", "ignore", "pipe"], env });
    this.keel = child;
    child.stderr?.on("data", (chunk: Buffer) => (this.log += chunk.toString()));
    // serve writes the port file, then says it listens (the log may interleave with that line: only its
    // start is looked for).
    await waitForOutput(child, "stderr", /keel: listening on /, "keel serve");
    this.port = Number(readFileSync(portFile, "utf8").trim());
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

  /** The page, pointed at this keel through the ?rpc= override. */
  url(): string {
    return `${this.staticOrigin}/?rpc=${encodeURIComponent(`ws://127.0.0.1:${this.port}/`)}`;
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
      await exited;
    }
    await this.stopModel();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Opens the app and waits until it is connected to keel. */
export async function openApp(page: Page, harness: KeelHarness): Promise<void> {
  await page.goto(harness.url());
  await page.locator('[data-state="open"]').waitFor();
}

export const test = base.extend<{ keel: KeelHarness }, { staticOrigin: string }>({
  staticOrigin: [
    async ({}, use) => {
      const { origin, server } = await startStatic();
      await use(origin);
      await new Promise((done) => server.close(done));
    },
    { scope: "worker" },
  ],
  keel: async ({ staticOrigin }, use) => {
    const harness = new KeelHarness(staticOrigin);
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
