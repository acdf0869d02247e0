// Generates protocol.d.ts, the TypeScript types of keel's protocol, from docs/protocol/keel-protocol-v1.schema.json
// with json-schema-to-typescript. `node generate.mjs` writes the file; `node generate.mjs --check` writes
// nothing and fails when the checked-in file differs from what the schema gives (the test suite runs it).
//
// The schema keeps its types under `definitions` (draft-07); the package names and emits every type listed
// under `$defs` of an object schema, so the root is wrapped in one that lists the same definitions under both.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from 'json-schema-to-typescript';

const here = dirname(fileURLToPath(import.meta.url));
const schemaPath = join(here, '../../docs/protocol/keel-protocol-v1.schema.json');
const outputPath = join(here, 'protocol.d.ts');

const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));
const definitions = schema.definitions;
const wrapper = {
  title: 'KeelProtocol',
  description: schema.description,
  type: 'object',
  additionalProperties: false,
  properties: { message: { oneOf: schema.oneOf } },
  definitions,
  $defs: definitions,
};

const banner = `/* Generated from docs/protocol/keel-protocol-v1.schema.json (protocol version ${schema['x-keel-protocol-version']})
 * by clients/ts/generate.mjs with json-schema-to-typescript. Do not edit: change the schema and run
 * \`npm run generate\` in clients/ts (scripts/test.sh fails while this file is stale). */`;
const generated = await compile(wrapper, 'KeelProtocol', {
  bannerComment: banner,
  unreachableDefinitions: true,
  additionalProperties: false,
  unknownAny: true,
  format: true,
  cwd: here,
});

if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(outputPath, 'utf8');
  } catch {
    // a missing file is a stale one
  }
  if (current !== generated) {
    console.error(`${outputPath} is stale: run \`npm run generate\` in clients/ts and commit the result`);
    process.exit(1);
  }
  console.log(`${outputPath} matches the schema`);
} else {
  writeFileSync(outputPath, generated);
}
