/**
 * Writes the example dataset (issue 37 item 6) into examples/: arithmetic and unit-conversion
 * word problems with exact answers, free-answer and multiple-choice, as JSONL and CSV. The same
 * seed writes the same files byte for byte; test/example-dataset.spec.ts checks the committed ones.
 *
 *   node -r ts-node/register/transpile-only -r tsconfig-paths/register scripts/make-example-dataset.ts [seed] [count]
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  EXAMPLE_DATASET_SEED,
  EXAMPLE_DATASET_SIZE,
  exampleDataset,
  exampleDatasetFiles,
} from '@conclave/analysis';

const [seedArg, countArg] = process.argv.slice(2);
const seed = seedArg === undefined ? EXAMPLE_DATASET_SEED : /^\d+$/.test(seedArg) ? Number(seedArg) : seedArg;
const count = countArg === undefined ? EXAMPLE_DATASET_SIZE : Number(countArg);
if (!Number.isInteger(count) || count < 1)
  throw new Error(`count must be a positive integer, got ${countArg}`);

const directory = join(__dirname, '..', 'examples');
for (const [name, text] of Object.entries(exampleDatasetFiles(exampleDataset(seed, count)))) {
  writeFileSync(join(directory, name), text);
  console.log(`wrote examples/${name} (${text.split('\n').length - 1} lines)`);
}
