/**
 * The example dataset in examples/ (issue 37 item 6): the committed files are what
 * scripts/make-example-dataset.ts writes for the default seed, every answer is right (solved
 * again here from each question's own words, not by the generator's code), and every file reads
 * back through the dataset parser as graded items.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  EXAMPLE_DATASET_SIZE,
  describeProblem,
  exampleDataset,
  exampleDatasetFiles,
  parseDataset,
  type DatasetItem,
} from '@conclave/analysis';

const read = (name: string) => readFileSync(join(__dirname, '..', 'examples', name), 'utf8');
const num = (text: string) => Number(text);

/** Each question shape and how to solve it from the numbers it states. */
const SOLVERS: [RegExp, (n: number[]) => number][] = [
  [/^A baker fills (\d+) trays with (\d+) muffins each\./, ([a, b]) => a * b],
  [/^\w+ has (\d+) marbles and gives (\d+) of them away\./, ([a, b]) => a - b],
  [/^A library has (\d+) books and receives (\d+) more\./, ([a, b]) => a + b],
  [/^(\d+) apples are shared equally among (\d+) children\./, ([a, b]) => a / b],
  [/^\w+ reads (\d+) pages every day\. How many pages does \w+ read in (\d+) weeks\?/, ([a, b]) => a * b * 7],
  [/^A garden is (\d+) metres long and (\d+) metres wide\./, ([a, b]) => a * b],
  [
    /^Pens are sold in packs of (\d+)\. How many packs are needed to have at least (\d+) pens\?/,
    ([b, a]) => Math.ceil(a / b),
  ],
  [
    /^\w+ saves (\d+) dollars every month for (\d+) months, then spends (\d+) dollars/,
    ([a, b, c]) => a * b - c,
  ],
  [/^A rectangle has sides of (\d+) cm and (\d+) cm\./, ([a, b]) => 2 * (a + b)],
  [
    /^A notebook costs (\d+)\.(\d\d) dollars\. How many dollars do (\d+) notebooks cost\?/,
    ([d, c, n]) => ((d * 100 + c) * n) / 100,
  ],
  [/^A hall has (\d+) rows of (\d+) seats, and (\d+) seats are empty\./, ([r, s, e]) => r * s - e],
  [/^A car drives at (\d+) km\/h for (\d+) hours\./, ([v, t]) => v * t],
  [/^A trail is ([\d.]+) km long\. How long is it in metres\?/, ([km]) => Math.round(km * 1000)],
  [/^A bag of flour weighs (\d+) grams\. How much is that in kilograms\?/, ([g]) => g / 1000],
  [/^A film lasts ([\d.]+) hours\. How many minutes is that\?/, ([h]) => Math.round(h * 60)],
  [/^How many minutes are there in (\d+) hours and (\d+) minutes\?/, ([h, m]) => h * 60 + m],
  [/^How many seconds are there in (\d+) minutes\?/, ([m]) => m * 60],
  [/^A jug holds ([\d.]+) litres\. How many millilitres is that\?/, ([l]) => Math.round(l * 1000)],
  [/^A plank is (\d+) centimetres long\. How long is it in metres\?/, ([cm]) => cm / 100],
  [/^A rope is (\d+) feet long\. How many inches is that\?/, ([ft]) => ft * 12],
  [/^A field is (\d+) yards long\. How many feet is that\?/, ([yd]) => yd * 3],
  [/^How many hours are there in (\d+) days\?/, ([d]) => d * 24],
  [/^How many days are there in (\d+) weeks\?/, ([w]) => w * 7],
  [/^A suitcase weighs (\d+) kilograms\. How many grams is that\?/, ([kg]) => kg * 1000],
];

function solve(question: string): number {
  const solvers = SOLVERS.filter(([pattern]) => pattern.test(question));
  expect(solvers).toHaveLength(1);
  const [pattern, solver] = solvers[0];
  return solver((pattern.exec(question) ?? []).slice(1).map(num));
}

const parsed = (name: string): DatasetItem[] => {
  const result = parseDataset(read(name), { fileName: name });
  if (!result.ok) throw new Error(result.problems.map(describeProblem).join('\n'));
  return result.items;
};

describe('the example dataset', () => {
  const items = exampleDataset();

  it('is what the script writes for the default seed, byte for byte', () => {
    for (const [name, text] of Object.entries(exampleDatasetFiles(items))) expect(read(name)).toBe(text);
  });

  it('is deterministic for a seed and differs between seeds', () => {
    expect(exampleDataset()).toEqual(items);
    expect(exampleDataset(38).map((i) => i.question)).not.toEqual(items.map((i) => i.question));
  });

  it('has a few hundred distinct problems of both kinds, every third also multiple-choice', () => {
    expect(items).toHaveLength(EXAMPLE_DATASET_SIZE);
    expect(new Set(items.map((i) => i.id)).size).toBe(items.length);
    expect(new Set(items.map((i) => i.question)).size).toBe(items.length);
    expect(items.filter((i) => i.kind === 'conversion').length).toBe(items.length / 2);
    expect(items.filter((i) => i.choices).length).toBe(items.length / 3);
  });

  it('every answer is exact and right: solved again from the question', () => {
    for (const item of items) {
      expect(Number.isFinite(item.answer) && item.answer >= 0).toBe(true);
      expect(String(item.answer)).toMatch(/^\d+(\.\d{1,2})?$/);
      expect(solve(item.question)).toBeCloseTo(item.answer, 9);
    }
    // Every question shape is used.
    for (const [pattern] of SOLVERS) expect(items.some((i) => pattern.test(i.question))).toBe(true);
  });

  it('multiple-choice items have four distinct options, one of them the answer under its letter', () => {
    for (const item of items.filter((i) => i.choices)) {
      expect(item.choices).toHaveLength(4);
      expect(new Set(item.choices).size).toBe(4);
      expect(item.choices?.['ABCD'.indexOf(item.choiceAnswer ?? '?')]).toBe(String(item.answer));
    }
  });

  it('reads back through the dataset parser: JSONL and CSV alike', () => {
    const free = parsed('word-problems.jsonl');
    expect(parsed('word-problems.csv')).toEqual(free.map((i) => ({ ...i, line: i.line + 1 })));
    expect(free.map((i) => [i.key, i.question, i.expected, i.graderHint])).toEqual(
      items.map((i) => [i.id, i.question, String(i.answer), 'numeric']),
    );
    const choice = parsed('word-problems-choices.jsonl');
    expect(parsed('word-problems-choices.csv')).toEqual(choice.map((i) => ({ ...i, line: i.line + 1 })));
    expect(choice.map((i) => [i.key, i.expected, i.graderHint, i.choices])).toEqual(
      items.filter((i) => i.choices).map((i) => [i.id, i.choiceAnswer, 'choice', i.choices]),
    );
  });
});
