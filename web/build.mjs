// npm run build: bundles src/ with esbuild into dist/index.html + dist/assets/*.{js,css} (content-hashed
// names), and prints the gzipped size of what a browser loads (the target is under 200 KB).
import { build } from "esbuild";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const root = dirname(fileURLToPath(import.meta.url));
const dist = join(root, "dist");
rmSync(dist, { recursive: true, force: true });
mkdirSync(join(dist, "assets"), { recursive: true });

const result = await build({
  entryPoints: [join(root, "src/main.tsx"), join(root, "src/styles.css")],
  outdir: join(dist, "assets"),
  entryNames: "[name]-[hash]",
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  metafile: true,
  logLevel: "warning",
});

const outputs = Object.keys(result.metafile.outputs);
const js = outputs.find((f) => f.endsWith(".js"));
const css = outputs.find((f) => f.endsWith(".css"));
if (js === undefined || css === undefined) throw new Error("esbuild produced no JS or CSS");
const html = readFileSync(join(root, "src/index.html"), "utf8")
  .replace("%JS%", "/assets/" + basename(js))
  .replace("%CSS%", "/assets/" + basename(css));
writeFileSync(join(dist, "index.html"), html);

let total = 0;
for (const file of [join(dist, "index.html"), ...outputs.map((f) => join(root, f))]) {
  const bytes = readFileSync(file);
  const gz = gzipSync(bytes, { level: 9 }).length;
  total += gz;
  console.log(`${file.slice(root.length + 1).padEnd(40)} ${String(bytes.length).padStart(8)} B  ${String(gz).padStart(7)} B gzipped`);
}
console.log(`total gzipped: ${(total / 1024).toFixed(1)} KB (target: under 200 KB)`);
writeFileSync(join(dist, "size.json"), JSON.stringify({ gzippedBytes: total }) + "\n");
