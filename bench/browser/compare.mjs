// compare.mjs — keel's browser tools side by side with Playwright MCP, in one run, over one MCP client.
//
// Both servers are driven by the same minimal MCP stdio client (newline-delimited JSON-RPC 2.0, protocol
// revision 2025-11-25) against the same test pages (tests/e2e/browser/pages, served here on 127.0.0.1 by a
// small static file server), each with its own headless Chromium from Debian's package. For each server:
//   - snapshot: browser_navigate to each page, then browser_snapshot (keel: mode "full" with a large
//     max_chars, and its default bounded snapshot too): bytes of the text content (UTF-8), distinct refs, and
//     refs of interactive elements (links, buttons, text boxes, …);
//   - click: the round trip of browser_click (from the request written to its result read) on a button of a
//     page that settles at once (rerender.html, "Pick Apple"), after one warm-up click; p50/p95;
//   - screenshot: the round trip of a viewport PNG (Playwright: browser_take_screenshot, keel:
//     browser_screenshot).
// Output: a JSON file (shape in docs/benchmarks.md) and a table on stdout with keel / Playwright ratios.
// A server that cannot run a step (not started, a tool missing, an error result) fails its column with the
// reason, and the script exits 1; nothing is skipped silently. Usage: node compare.mjs --help.

import { spawn } from 'node:child_process';
import { createReadStream, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir, hostname, cpus } from 'node:os';
import { dirname, extname, join, normalize, resolve, sep } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');

const USAGE = `usage: node compare.mjs [options]
  --servers LIST         which columns to run, comma-separated: playwright,keel (default both)
  --playwright-cmd CMD   Playwright MCP's command line (default: node <this dir>/node_modules/@playwright/mcp/cli.js
                         --executable-path /usr/lib/chromium/chromium --headless --isolated --no-sandbox
                         --viewport-size 1280x800 --output-dir {tmp}/playwright-out)
  --keel-cmd CMD         keel's MCP server (default: <repo>/build/keel mcp-server --browser --allow-writes
                         --workspace {tmp} --set data_dir={tmp}/keel-data)
                         Commands are split at spaces; {tmp} is a fresh temporary directory of this run.
  --keel-max-chars N     max_chars of keel's full snapshot (default 60000, the most the tool accepts)
  --pages DIR            the pages to serve (default <repo>/tests/e2e/browser/pages)
  --snapshots N          snapshots per page (default 3; the first one is cold)
  --clicks N             measured clicks (default 20)
  --screenshots N        measured screenshots per page (default 10)
  --out FILE             the JSON results (default browser_compare.json in the working directory)
  --save-texts DIR       also write each server's last snapshot text of each page there (<server>-<page>.txt)
  --timeout-ms N         a single request's limit (default 120000)`;

// ---------------------------------------------------------------------------------------------- options

function parseOptions(argv) {
  const options = {
    servers: ['playwright', 'keel'],
    playwrightCmd: `node ${join(here, 'node_modules/@playwright/mcp/cli.js')} --executable-path ` +
                   '/usr/lib/chromium/chromium --headless --isolated --no-sandbox --viewport-size 1280x800 ' +
                   '--output-dir {tmp}/playwright-out',
    keelCmd: `${join(repo, 'build/keel')} mcp-server --browser --allow-writes --workspace {tmp} ` +
             '--set data_dir={tmp}/keel-data',
    keelMaxChars: 60000,
    pages: join(repo, 'tests/e2e/browser/pages'),
    snapshots: 3,
    clicks: 20,
    screenshots: 10,
    out: 'browser_compare.json',
    saveTexts: null,
    timeoutMs: 120000,
  };
  const numbers = { '--keel-max-chars': 'keelMaxChars', '--snapshots': 'snapshots', '--clicks': 'clicks',
                    '--screenshots': 'screenshots', '--timeout-ms': 'timeoutMs' };
  const strings = { '--playwright-cmd': 'playwrightCmd', '--keel-cmd': 'keelCmd', '--pages': 'pages',
                    '--out': 'out', '--save-texts': 'saveTexts' };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      process.exit(0);
    }
    const value = argv[i + 1];
    if (value === undefined) usageError(`${arg} needs a value`);
    i++;
    if (arg === '--servers') {
      options.servers = value.split(',').filter((s) => s !== '');
      for (const s of options.servers) if (s !== 'playwright' && s !== 'keel') usageError(`unknown server ${s}`);
    } else if (arg in numbers) {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) usageError(`${arg} wants a positive integer`);
      options[numbers[arg]] = n;
    } else if (arg in strings) {
      options[strings[arg]] = value;
    } else {
      usageError(`unknown option ${arg}`);
    }
  }
  return options;
}

function usageError(message) {
  console.error(`compare.mjs: ${message}\n${USAGE}`);
  process.exit(2);
}

// ------------------------------------------------------------------------------------------ static site

const CONTENT_TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css',
                        '.png': 'image/png', '.txt': 'text/plain; charset=utf-8', '.json': 'application/json' };

// Serves `root` on 127.0.0.1 (a port the system picks); nothing outside it.
function serveDirectory(root) {
  const base = resolve(root);
  const server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url, 'http://127.0.0.1').pathname);
    let file = normalize(join(base, path));
    if (file !== base && !file.startsWith(base + sep)) {
      response.writeHead(404).end();
      return;
    }
    try {
      if (statSync(file).isDirectory()) file = join(file, 'index.html');
      statSync(file);
    } catch {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'Content-Type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
                              'Cache-Control': 'no-store' });
    createReadStream(file).pipe(response);
  });
  return new Promise((resolveServer, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolveServer(server));
  });
}

// ------------------------------------------------------------------------------------------- MCP client

// One MCP server process over stdio. request() resolves with the JSON-RPC message answering it.
class McpClient {
  constructor(name, argv, cwd) {
    this.name = name;
    this.pending = new Map();
    this.nextId = 1;
    this.stderr = '';
    this.exited = null;
    this.child = spawn(argv[0], argv.slice(1), { cwd, stdio: ['pipe', 'pipe', 'pipe'],
                                                 env: { ...process.env, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1' } });
    this.child.stderr.on('data', (chunk) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
    this.child.on('error', (error) => this.fail(`cannot start ${argv[0]}: ${error.message}`));
    this.child.on('exit', (code, signal) => this.fail(`the server exited (${signal ?? `status ${code}`})`));
    this.child.stdin.on('error', () => {});
    createInterface({ input: this.child.stdout }).on('line', (line) => this.onLine(line));
  }

  fail(reason) {
    if (this.exited === null) this.exited = reason;
    for (const { reject } of this.pending.values()) reject(new Error(`${reason}; stderr: ${this.stderrTail()}`));
    this.pending.clear();
  }

  stderrTail() {
    return this.stderr.trim().split('\n').slice(-5).join(' | ');
  }

  onLine(line) {
    if (line.trim() === '') return;
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return;  // not ours to judge; a request waiting for its answer times out
    }
    if (message.method !== undefined && message.id !== undefined) {
      // A request from the server (roots/list, elicitation): this client offers none of them.
      this.write({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'not supported' } });
      return;
    }
    const waiter = this.pending.get(message.id);
    if (waiter === undefined) return;
    this.pending.delete(message.id);
    waiter.resolve({ message, received: performance.now() });
  }

  write(message) {
    this.child.stdin.write(JSON.stringify(message) + '\n');
  }

  // Resolves {message, ms}: ms from the request written to its answer read.
  request(method, params, timeoutMs) {
    if (this.exited !== null) return Promise.reject(new Error(`${this.exited}; stderr: ${this.stderrTail()}`));
    const id = this.nextId++;
    return new Promise((resolveRequest, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method} got no answer in ${timeoutMs} ms`));
      }, timeoutMs);
      const sent = performance.now();
      this.pending.set(id, {
        resolve: ({ message, received }) => {
          clearTimeout(timer);
          resolveRequest({ message, ms: received - sent });
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      this.write({ jsonrpc: '2.0', id, method, params });
    });
  }

  notify(method, params) {
    this.write({ jsonrpc: '2.0', method, params });
  }

  // Ends the server: stdin closed, then SIGTERM, then SIGKILL (this process's own child, by pid).
  async close() {
    if (this.exited !== null) return;
    const gone = new Promise((resolveExit) => this.child.once('exit', resolveExit));
    this.child.stdin.end();
    const term = setTimeout(() => this.child.kill('SIGTERM'), 5000);
    const kill = setTimeout(() => this.child.kill('SIGKILL'), 10000);
    await gone;
    clearTimeout(term);
    clearTimeout(kill);
  }
}

// ---------------------------------------------------------------------------------------------- servers

const INTERACTIVE_ROLES = new Set([
  'link', 'button', 'textbox', 'searchbox', 'checkbox', 'radio', 'combobox', 'listbox', 'option', 'slider',
  'spinbutton', 'switch', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'treeitem', 'iframe',
]);

// How each server names its tools, its refs and its arguments.
const PROFILES = {
  playwright: {
    label: 'Playwright MCP',
    tools: { navigate: 'browser_navigate', snapshot: 'browser_snapshot', click: 'browser_click',
             screenshot: 'browser_take_screenshot' },
    fullSnapshotArgs: () => ({}),
    defaultSnapshotArgs: null,  // its only snapshot is the whole page
    screenshotArgs: { type: 'png' },
    // "- button "Buy 1" [ref=e7]", "- link "Item 0" [ref=e5] [cursor=pointer]:"
    refLine: /^\s*- ([a-z]+)(?: "((?:[^"\\]|\\.)*)")?.*?\[ref=([A-Za-z0-9]+)\]/,
    lineParts: (m) => ({ role: m[1], name: m[2] ?? '', ref: m[3] }),
  },
  keel: {
    label: 'keel',
    tools: { navigate: 'browser_navigate', snapshot: 'browser_snapshot', click: 'browser_click',
             screenshot: 'browser_screenshot' },
    fullSnapshotArgs: (options) => ({ mode: 'full', max_chars: options.keelMaxChars }),
    defaultSnapshotArgs: {},
    screenshotArgs: {},
    // " e1 textbox "Search"", " - e9 link "Item 0" → #i0", " f2e1 button "Cross-origin frame button""
    refLine: /^\s*(?:- )?((?:f\d+)?e\d+) ([a-z]+)(?: "((?:[^"\\]|\\.)*)")?/,
    lineParts: (m) => ({ ref: m[1], role: m[2], name: m[3] ?? '' }),
  },
};

// The refs a snapshot text offers: every distinct ref, and those of interactive roles.
function refsOf(profile, text) {
  const refs = new Map();
  for (const line of text.split('\n')) {
    const m = profile.refLine.exec(line);
    if (m) {
      const parts = profile.lineParts(m);
      if (!refs.has(parts.ref)) refs.set(parts.ref, parts);
    }
  }
  let interactive = 0;
  for (const { role } of refs.values()) if (INTERACTIVE_ROLES.has(role)) ++interactive;
  return { refs, interactive };
}

function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const at = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[at];
}

function stats(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (x) => (x === null ? null : Math.round(x * 10) / 10);
  return { n: samples.length, p50_ms: round(percentile(sorted, 50)), p95_ms: round(percentile(sorted, 95)),
           min_ms: round(sorted[0] ?? null), max_ms: round(sorted[sorted.length - 1] ?? null),
           samples_ms: samples.map(round) };
}

// One server's column: every measurement, or the reason it stopped.
async function measureServer(kind, argv, origin, options, workdir) {
  const profile = PROFILES[kind];
  const column = { server: profile.label, command: argv, ok: false };
  const client = new McpClient(kind, argv, workdir);
  const call = async (name, args) => {
    const { message, ms } = await client.request('tools/call', { name, arguments: args }, options.timeoutMs);
    if (message.error) throw new Error(`${name}: JSON-RPC error ${JSON.stringify(message.error)}`);
    if (message.result.isError) throw new Error(`${name} failed: ${textOf(message.result).slice(0, 500)}`);
    return { result: message.result, ms };
  };
  try {
    const init = await client.request('initialize', {
      protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'keel-browser-bench', version: '1' },
    }, options.timeoutMs);
    if (init.message.error) throw new Error(`initialize: ${JSON.stringify(init.message.error)}`);
    column.serverInfo = init.message.result.serverInfo;
    column.protocolVersion = init.message.result.protocolVersion;
    client.notify('notifications/initialized', {});
    const listed = await client.request('tools/list', {}, options.timeoutMs);
    if (listed.message.error) throw new Error(`tools/list: ${JSON.stringify(listed.message.error)}`);
    const tools = listed.message.result.tools ?? [];
    column.tools = tools.length;
    column.tools_list_bytes = Buffer.byteLength(JSON.stringify(listed.message.result));
    const byName = new Map(tools.map((t) => [t.name, t]));
    const missing = Object.values(profile.tools).filter((name) => !byName.has(name));
    if (missing.length > 0) {
      throw new Error(`the server lacks the tools ${missing.join(', ')} (it offers ${[...byName.keys()].join(', ')})`);
    }
    // keel's max_chars has a maximum in its schema: asking for more would be refused, so ask for at most that.
    const maxChars = byName.get(profile.tools.snapshot).inputSchema?.properties?.max_chars?.maximum;
    const snapshotOptions = { ...options };
    if (kind === 'keel' && typeof maxChars === 'number' && maxChars < options.keelMaxChars) {
      snapshotOptions.keelMaxChars = maxChars;
    }
    if (kind === 'keel') column.full_snapshot_args = profile.fullSnapshotArgs(snapshotOptions);
    // Playwright MCP has called the click target `ref` and, in some versions, `target`.
    const clickProps = byName.get(profile.tools.click).inputSchema?.properties ?? {};
    const refParam = 'ref' in clickProps ? 'ref' : 'target' in clickProps ? 'target' : 'ref';

    column.snapshot = {};
    for (const page of ['big5000.html', 'long-list.html', 'forms.html', 'rerender.html']) {
      const navigated = await call(profile.tools.navigate, { url: `${origin}/${page}` });
      const entry = { navigate_ms: Math.round(navigated.ms), runs_ms: [] };
      let text = '';
      for (let i = 0; i < options.snapshots; i++) {
        const shot = await call(profile.tools.snapshot, profile.fullSnapshotArgs(snapshotOptions));
        entry.runs_ms.push(Math.round(shot.ms));
        text = textOf(shot.result);
      }
      const { refs, interactive } = refsOf(profile, text);
      entry.bytes = Buffer.byteLength(text);
      if (options.saveTexts !== null) {
        mkdirSync(options.saveTexts, { recursive: true });
        writeFileSync(join(options.saveTexts, `${kind}-${page}.txt`), text);
      }
      entry.refs = refs.size;
      entry.interactive_refs = interactive;
      if (kind === 'keel') {
        // The header says "(<shown> of <total> refs)": a full snapshot cut by max_chars is not comparable.
        const header = /\((\d[\d,]*) of (\d[\d,]*) refs\)/.exec(text);
        if (header) {
          entry.shown_refs = Number(header[1].replaceAll(',', ''));
          entry.total_refs = Number(header[2].replaceAll(',', ''));
          entry.complete = entry.shown_refs === entry.total_refs;
        }
        const bounded = await call(profile.tools.snapshot, profile.defaultSnapshotArgs);
        const boundedText = textOf(bounded.result);
        entry.default_snapshot = { bytes: Buffer.byteLength(boundedText), refs: refsOf(profile, boundedText).refs.size,
                                   ms: Math.round(bounded.ms) };
      } else {
        entry.complete = true;
      }
      column.snapshot[page] = entry;
    }

    // Click round trip on a page that settles at once.
    await call(profile.tools.navigate, { url: `${origin}/rerender.html` });
    const snap = await call(profile.tools.snapshot, profile.fullSnapshotArgs(snapshotOptions));
    const target = [...refsOf(profile, textOf(snap.result)).refs.values()]
      .find((r) => r.role === 'button' && r.name === 'Pick Apple');
    if (!target) throw new Error('no ref for button "Pick Apple" in the snapshot of rerender.html');
    const clickArgs = { [refParam]: target.ref, element: 'Pick Apple button' };
    const warm = await call(profile.tools.click, clickArgs);
    const clicks = [];
    for (let i = 0; i < options.clicks; i++) clicks.push((await call(profile.tools.click, clickArgs)).ms);
    const after = await call(profile.tools.snapshot, profile.fullSnapshotArgs(snapshotOptions));
    column.click = { page: 'rerender.html', element: 'button "Pick Apple"', ref: target.ref,
                     warmup_ms: Math.round(warm.ms), ...stats(clicks),
                     reply_bytes: Buffer.byteLength(textOf(warm.result)),
                     effect_seen: textOf(after.result).includes('Picked Apple') };
    if (!column.click.effect_seen) throw new Error('the clicks did not show "Picked Apple" on the page');

    column.screenshot = {};
    for (const page of ['rerender.html', 'big5000.html']) {
      await call(profile.tools.navigate, { url: `${origin}/${page}` });
      await call(profile.tools.screenshot, profile.screenshotArgs);  // warm-up
      const shots = [];
      let imageBytes = 0;
      for (let i = 0; i < options.screenshots; i++) {
        const shot = await call(profile.tools.screenshot, profile.screenshotArgs);
        shots.push(shot.ms);
        const image = (shot.result.content ?? []).find((c) => c.type === 'image');
        imageBytes = image ? Buffer.from(image.data, 'base64').length : 0;
      }
      column.screenshot[page] = { ...stats(shots), png_bytes: imageBytes };
    }
    column.ok = true;
  } catch (error) {
    column.error = error.message;
  } finally {
    await client.close();
  }
  return column;
}

// ----------------------------------------------------------------------------------------------- report

function ratio(a, b) {
  return typeof a === 'number' && typeof b === 'number' && b > 0 ? Math.round((a / b) * 1000) / 1000 : null;
}

function comparison(columns) {
  const keel = columns.keel;
  const playwright = columns.playwright;
  if (!keel?.ok || !playwright?.ok) return null;
  const out = { snapshot: {}, click: {}, screenshot: {} };
  for (const page of Object.keys(playwright.snapshot)) {
    const k = keel.snapshot[page];
    const p = playwright.snapshot[page];
    out.snapshot[page] = { keel_bytes: k.bytes, playwright_bytes: p.bytes, ratio: ratio(k.bytes, p.bytes),
                           keel_complete: k.complete ?? null, keel_interactive_refs: k.interactive_refs,
                           playwright_interactive_refs: p.interactive_refs };
  }
  const big = out.snapshot['big5000.html'];
  big.target_ratio = 0.7;
  big.target_met = big.keel_complete === true && big.ratio !== null && big.ratio <= 0.7 &&
                   big.keel_interactive_refs >= big.playwright_interactive_refs;
  out.click = { keel_p50_ms: keel.click.p50_ms, playwright_p50_ms: playwright.click.p50_ms,
                ratio: ratio(keel.click.p50_ms, playwright.click.p50_ms), target_keel_p50_ms: 150,
                target_met: keel.click.p50_ms < 150 };
  for (const page of Object.keys(playwright.screenshot)) {
    out.screenshot[page] = { keel_p50_ms: keel.screenshot[page].p50_ms,
                             playwright_p50_ms: playwright.screenshot[page].p50_ms,
                             ratio: ratio(keel.screenshot[page].p50_ms, playwright.screenshot[page].p50_ms) };
  }
  return out;
}

function table(columns, order) {
  const rows = [];
  const cell = (kind, pick) => {
    const column = columns[kind];
    if (!column) return '-';
    if (!column.ok) return 'FAILED';
    const value = pick(column);
    return value === undefined || value === null ? '-' : String(value);
  };
  const add = (label, pick, compare = true) => {
    const values = order.map((kind) => cell(kind, pick));
    let r = '';
    if (compare && columns.keel?.ok && columns.playwright?.ok) {
      const k = Number(pick(columns.keel));
      const p = Number(pick(columns.playwright));
      if (Number.isFinite(k) && Number.isFinite(p) && p > 0) r = (k / p).toFixed(3);
    }
    rows.push([label, ...values, r]);
  };
  for (const page of ['big5000.html', 'long-list.html', 'forms.html', 'rerender.html']) {
    add(`snapshot ${page} bytes`, (c) => c.snapshot[page].bytes);
    add(`snapshot ${page} interactive refs`, (c) => c.snapshot[page].interactive_refs);
    add(`snapshot ${page} complete`, (c) => c.snapshot[page].complete, false);
    add(`snapshot ${page} warm ms (last)`, (c) => c.snapshot[page].runs_ms.at(-1));
  }
  add('keel default snapshot big5000.html bytes', (c) => c.snapshot['big5000.html'].default_snapshot?.bytes, false);
  add('click p50 ms', (c) => c.click.p50_ms);
  add('click p95 ms', (c) => c.click.p95_ms);
  add('screenshot rerender.html p50 ms', (c) => c.screenshot['rerender.html'].p50_ms);
  add('screenshot big5000.html p50 ms', (c) => c.screenshot['big5000.html'].p50_ms);
  const header = ['measure', ...order.map((k) => PROFILES[k].label), 'keel/Playwright'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r) => r.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}

// ------------------------------------------------------------------------------------------------- main

async function main() {
  const options = parseOptions(process.argv.slice(2));
  if (!existsSync(options.pages)) usageError(`no pages directory ${options.pages}`);
  const workdir = mkdtempSync(join(tmpdir(), 'keel-browser-compare-'));
  const server = await serveDirectory(options.pages);
  const origin = `http://127.0.0.1:${server.address().port}`;
  const columns = {};
  try {
    // One server at a time: they would otherwise compete for the same two cores.
    for (const kind of options.servers) {
      const command = kind === 'playwright' ? options.playwrightCmd : options.keelCmd;
      const argv = command.replaceAll('{tmp}', workdir).split(' ').filter((s) => s !== '');
      console.error(`compare.mjs: measuring ${PROFILES[kind].label}: ${argv.join(' ')}`);
      columns[kind] = await measureServer(kind, argv, origin, options, workdir);
      if (!columns[kind].ok) console.error(`compare.mjs: ${PROFILES[kind].label} FAILED: ${columns[kind].error}`);
    }
  } finally {
    server.close();
    rmSync(workdir, { recursive: true, force: true });
  }
  const report = {
    context: { date: new Date().toISOString(), host: hostname(), cpus: cpus().length, node: process.version,
               pages: options.pages, snapshots_per_page: options.snapshots, clicks: options.clicks,
               screenshots_per_page: options.screenshots, keel_max_chars: options.keelMaxChars },
    servers: columns,
    comparison: comparison(columns),
  };
  writeFileSync(options.out, JSON.stringify(report, null, 2) + '\n');
  console.log(table(columns, options.servers));
  console.log(`results: ${options.out}`);
  const failed = options.servers.filter((kind) => !columns[kind].ok);
  if (failed.length > 0) {
    for (const kind of failed) console.error(`compare.mjs: ${PROFILES[kind].label}: ${columns[kind].error}`);
    process.exit(1);
  }
}

await main();
