import { SeededRandom, type Seed } from '../random';
import { writeCsv } from './csv';

/**
 * The example dataset Conclave ships (issue 37 item 6): arithmetic and unit-conversion word
 * problems with exact answers, written for the project (so its licence is the project's) by
 * `scripts/make-example-dataset.ts` into examples/. Deterministic for a seed: the same seed gives
 * the same files, byte for byte (test/example-dataset.spec.ts checks the committed ones).
 *
 * Every answer is an integer or a decimal with at most two places, computed in integers (a
 * decimal is an integer of tenths or hundredths divided once, which prints as that decimal).
 */

export interface ExampleItem {
  /** `wp-001` …: stable for a seed. */
  id: string;
  kind: 'arithmetic' | 'conversion';
  question: string;
  answer: number;
  /** Every third item also as a multiple-choice item: four options, one of them the answer. */
  choices?: string[];
  /** The letter of the right option. */
  choiceAnswer?: string;
}

export const EXAMPLE_DATASET_SEED = 37;
export const EXAMPLE_DATASET_SIZE = 300;

const NAMES = [
  'Ada',
  'Bram',
  'Chen',
  'Dalia',
  'Emeka',
  'Freya',
  'Goran',
  'Hana',
  'Ines',
  'Jonas',
  'Kiri',
  'Luca',
];

type Template = (r: Draw) => { kind: ExampleItem['kind']; question: string; answer: number };

/** Uniform integers and picks from one seeded stream. */
class Draw {
  constructor(private readonly random: SeededRandom) {}
  int(min: number, max: number): number {
    return min + this.random.nextInt(max - min + 1);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.random.nextInt(items.length)];
  }
  name(): string {
    return this.pick(NAMES);
  }
}

/** `t / 10` or `t / 100` as the decimal it is (one division of integers prints exactly). */
const tenths = (t: number) => t / 10;
const hundredths = (t: number) => t / 100;

const ARITHMETIC: Template[] = [
  (r) => {
    const [a, b] = [r.int(3, 24), r.int(4, 36)];
    return {
      kind: 'arithmetic',
      question: `A baker fills ${a} trays with ${b} muffins each. How many muffins are there in all?`,
      answer: a * b,
    };
  },
  (r) => {
    const name = r.name();
    const b = r.int(5, 80);
    const a = b + r.int(5, 150);
    return {
      kind: 'arithmetic',
      question: `${name} has ${a} marbles and gives ${b} of them away. How many marbles does ${name} have left?`,
      answer: a - b,
    };
  },
  (r) => {
    const [a, b] = [r.int(120, 900), r.int(15, 400)];
    return {
      kind: 'arithmetic',
      question: `A library has ${a} books and receives ${b} more. How many books does it have now?`,
      answer: a + b,
    };
  },
  (r) => {
    const [b, k] = [r.int(3, 12), r.int(3, 15)];
    return {
      kind: 'arithmetic',
      question: `${b * k} apples are shared equally among ${b} children. How many apples does each child get?`,
      answer: k,
    };
  },
  (r) => {
    const name = r.name();
    const [a, b] = [r.int(8, 45), r.int(2, 8)];
    return {
      kind: 'arithmetic',
      question: `${name} reads ${a} pages every day. How many pages does ${name} read in ${b} weeks?`,
      answer: a * b * 7,
    };
  },
  (r) => {
    const [a, b] = [r.int(4, 40), r.int(3, 30)];
    return {
      kind: 'arithmetic',
      question: `A garden is ${a} metres long and ${b} metres wide. What is its area in square metres?`,
      answer: a * b,
    };
  },
  (r) => {
    const [b, a] = [r.int(4, 12), r.int(20, 300)];
    return {
      kind: 'arithmetic',
      question: `Pens are sold in packs of ${b}. How many packs are needed to have at least ${a} pens?`,
      answer: Math.ceil(a / b),
    };
  },
  (r) => {
    const name = r.name();
    const [a, b] = [r.int(20, 150), r.int(3, 12)];
    const c = r.int(10, a * b - 1);
    return {
      kind: 'arithmetic',
      question: `${name} saves ${a} dollars every month for ${b} months, then spends ${c} dollars on a bicycle. How many dollars are left?`,
      answer: a * b - c,
    };
  },
  (r) => {
    const [a, b] = [r.int(3, 60), r.int(3, 60)];
    return {
      kind: 'arithmetic',
      question: `A rectangle has sides of ${a} cm and ${b} cm. What is its perimeter in centimetres?`,
      answer: 2 * (a + b),
    };
  },
  (r) => {
    const [price, cents] = [r.int(2, 19), r.pick([0, 25, 50, 75])];
    const n = r.int(2, 9);
    const unit = price * 100 + cents;
    return {
      kind: 'arithmetic',
      question: `A notebook costs ${hundredths(unit).toFixed(2)} dollars. How many dollars do ${n} notebooks cost?`,
      answer: hundredths(unit * n),
    };
  },
  (r) => {
    const [seats, rows, empty] = [r.int(12, 40), r.int(8, 30), r.int(1, 50)];
    return {
      kind: 'arithmetic',
      question: `A hall has ${rows} rows of ${seats} seats, and ${empty} seats are empty. How many seats are taken?`,
      answer: rows * seats - empty,
    };
  },
  (r) => {
    const [v, t] = [r.int(30, 120), r.int(2, 9)];
    return {
      kind: 'arithmetic',
      question: `A car drives at ${v} km/h for ${t} hours. How many kilometres does it cover?`,
      answer: v * t,
    };
  },
];

const CONVERSION: Template[] = [
  (r) => {
    const t = r.int(11, 99);
    return {
      kind: 'conversion',
      question: `A trail is ${tenths(t)} km long. How long is it in metres?`,
      answer: t * 100,
    };
  },
  (r) => {
    const g = r.int(2, 95) * 100;
    return {
      kind: 'conversion',
      question: `A bag of flour weighs ${g} grams. How much is that in kilograms?`,
      answer: tenths(g / 100),
    };
  },
  (r) => {
    const t = r.int(3, 19);
    return {
      kind: 'conversion',
      question: `A film lasts ${tenths(t * 5)} hours. How many minutes is that?`,
      answer: t * 30,
    };
  },
  (r) => {
    const [h, m] = [r.int(1, 9), r.int(1, 59)];
    return {
      kind: 'conversion',
      question: `How many minutes are there in ${h} hours and ${m} minutes?`,
      answer: h * 60 + m,
    };
  },
  (r) => {
    const m = r.int(2, 45);
    return { kind: 'conversion', question: `How many seconds are there in ${m} minutes?`, answer: m * 60 };
  },
  (r) => {
    const t = r.int(5, 60);
    return {
      kind: 'conversion',
      question: `A jug holds ${tenths(t * 5)} litres. How many millilitres is that?`,
      answer: t * 500,
    };
  },
  (r) => {
    const cm = r.int(12, 950);
    return {
      kind: 'conversion',
      question: `A plank is ${cm} centimetres long. How long is it in metres?`,
      answer: hundredths(cm),
    };
  },
  (r) => {
    const ft = r.int(2, 30);
    return {
      kind: 'conversion',
      question: `A rope is ${ft} feet long. How many inches is that? (1 foot = 12 inches)`,
      answer: ft * 12,
    };
  },
  (r) => {
    const yd = r.int(3, 120);
    return {
      kind: 'conversion',
      question: `A field is ${yd} yards long. How many feet is that? (1 yard = 3 feet)`,
      answer: yd * 3,
    };
  },
  (r) => {
    const d = r.int(2, 30);
    return { kind: 'conversion', question: `How many hours are there in ${d} days?`, answer: d * 24 };
  },
  (r) => {
    const w = r.int(2, 52);
    return { kind: 'conversion', question: `How many days are there in ${w} weeks?`, answer: w * 7 };
  },
  (r) => {
    const kg = r.int(2, 80);
    return {
      kind: 'conversion',
      question: `A suitcase weighs ${kg} kilograms. How many grams is that?`,
      answer: kg * 1000,
    };
  },
];

const LETTERS = 'ABCD';

/** Four options, the answer among three near misses a hurried solver could give, in a seeded order. */
function multipleChoice(answer: number, r: Draw): { choices: string[]; choiceAnswer: string } {
  const decimals = String(answer).split('.')[1]?.length ?? 0;
  const unit = 10 ** -decimals;
  const candidates = new Set<string>();
  const near = [1, 2, 3, 5, 10, 12].map((k) => k * unit);
  // A slip of a place or of a step, never negative, never the answer itself.
  const ideas = [answer * 10, answer / 10, ...near.flatMap((d) => [answer + d, answer - d])];
  for (let guard = 0; candidates.size < 3 && guard < 200; guard++) {
    const value = Number(r.pick(ideas).toFixed(Math.max(decimals, 0) + 1));
    const text = String(value);
    if (value > 0 && text !== String(answer) && (text.split('.')[1]?.length ?? 0) <= Math.max(decimals, 1)) {
      candidates.add(text);
    }
  }
  const options = [String(answer), ...candidates];
  // Fisher–Yates with the same stream.
  for (let i = options.length - 1; i > 0; i--) {
    const j = r.int(0, i);
    [options[i], options[j]] = [options[j], options[i]];
  }
  return { choices: options, choiceAnswer: LETTERS[options.indexOf(String(answer))] };
}

/** `count` items from `seed`: arithmetic and conversions alternating, every third with choices. */
export function exampleDataset(
  seed: Seed = EXAMPLE_DATASET_SEED,
  count = EXAMPLE_DATASET_SIZE,
): ExampleItem[] {
  const r = new Draw(new SeededRandom(seed));
  const items: ExampleItem[] = [];
  const questions = new Set<string>();
  for (let i = 0; items.length < count && i < count * 20; i++) {
    const template = r.pick(items.length % 2 === 0 ? ARITHMETIC : CONVERSION);
    const { kind, question, answer } = template(r);
    if (questions.has(question)) continue; // every question once
    questions.add(question);
    const id = `wp-${String(items.length + 1).padStart(3, '0')}`;
    const item: ExampleItem = { id, kind, question, answer };
    if (items.length % 3 === 2) Object.assign(item, multipleChoice(answer, r));
    items.push(item);
  }
  return items;
}

/** The files of examples/, by name: the free-answer items and the multiple-choice ones, as JSONL and CSV. */
export function exampleDatasetFiles(
  items: readonly ExampleItem[] = exampleDataset(),
): Record<string, string> {
  const withChoices = items.filter((i) => i.choices !== undefined);
  const jsonl = (rows: readonly object[]) => rows.map((row) => `${JSON.stringify(row)}\n`).join('');
  return {
    'word-problems.jsonl': jsonl(items.map(({ id, question, answer }) => ({ id, question, answer }))),
    'word-problems.csv': writeCsv(
      ['id', 'question', 'answer'],
      items.map(({ id, question, answer }) => [id, question, answer]),
    ),
    'word-problems-choices.jsonl': jsonl(
      withChoices.map(({ id, question, choices, choiceAnswer }) => ({
        id,
        question,
        choices,
        answer: choiceAnswer,
      })),
    ),
    'word-problems-choices.csv': writeCsv(
      ['id', 'question', 'A', 'B', 'C', 'D', 'answer'],
      withChoices.map(({ id, question, choices = [], choiceAnswer = '' }) => [
        id,
        question,
        ...choices,
        choiceAnswer,
      ]),
    ),
  };
}
