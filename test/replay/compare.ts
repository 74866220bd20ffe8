/**
 * Compares two replay recordings (record.ts) scenario by scenario and prints each difference as
 * `scenario › path: before → after`. Exits 0 when they are the same, 1 when they differ, 2 on a
 * usage error.
 *
 *   node -r ts-node/register/transpile-only -r tsconfig-paths/register test/replay/compare.ts BEFORE.json AFTER.json
 *   (npm run replay:compare -- BEFORE.json AFTER.json; --max <n> prints at most n differences per scenario)
 */
import { readFileSync } from 'node:fs';

export interface Difference {
  path: string;
  before: unknown;
  after: unknown;
}

const MISSING = Symbol('missing');

/** Every place where `a` and `b` differ, as JSON paths (`.key`, `[i]`). */
export function differences(a: unknown, b: unknown, path = ''): Difference[] {
  if (Object.is(a, b)) return [];
  if (Array.isArray(a) && Array.isArray(b)) {
    const out: Difference[] = [];
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      out.push(...differences(i < a.length ? a[i] : MISSING, i < b.length ? b[i] : MISSING, `${path}[${i}]`));
    }
    return out;
  }
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((key) =>
      differences(key in a ? a[key] : MISSING, key in b ? b[key] : MISSING, `${path}.${key}`),
    );
  }
  return [{ path: path || '.', before: a, after: b }];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function show(value: unknown): string {
  if (value === MISSING) return '(absent)';
  const text = JSON.stringify(value);
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

interface Recording {
  scenarios: { name: string; record: unknown }[];
}

/** The report of two recordings: lines to print, and whether they are the same. */
export function compareRecordings(
  before: Recording,
  after: Recording,
  maxPerScenario = 20,
): { same: boolean; lines: string[] } {
  const lines: string[] = [];
  const a = new Map(before.scenarios.map((s) => [s.name, s.record]));
  const b = new Map(after.scenarios.map((s) => [s.name, s.record]));
  let differing = 0;
  for (const name of [...new Set([...a.keys(), ...b.keys()])]) {
    if (!a.has(name) || !b.has(name)) {
      differing++;
      lines.push(`${name}: only in the ${a.has(name) ? 'first' : 'second'} recording`);
      continue;
    }
    const found = differences(a.get(name), b.get(name));
    if (found.length === 0) continue;
    differing++;
    lines.push(`${name}: ${found.length} difference${found.length === 1 ? '' : 's'}`);
    for (const d of found.slice(0, maxPerScenario)) {
      lines.push(`  ${d.path}`, `    - ${show(d.before)}`, `    + ${show(d.after)}`);
    }
    if (found.length > maxPerScenario) lines.push(`  ... ${found.length - maxPerScenario} more`);
  }
  const total = new Set([...a.keys(), ...b.keys()]).size;
  lines.push(
    differing === 0
      ? `same: ${total} scenarios, no difference`
      : `DIFFERENT: ${differing} of ${total} scenarios differ`,
  );
  return { same: differing === 0, lines };
}

function main(): void {
  const args = process.argv.slice(2);
  const maxAt = args.indexOf('--max');
  const max = maxAt >= 0 ? Number(args.splice(maxAt, 2)[1]) : 20;
  if (args.length !== 2 || !Number.isFinite(max)) {
    console.error('usage: compare.ts BEFORE.json AFTER.json [--max <differences per scenario>]');
    process.exit(2);
  }
  const [before, after] = args.map((file) => JSON.parse(readFileSync(file, 'utf8')) as Recording);
  const { same, lines } = compareRecordings(before, after, max);
  console.log(lines.join('\n'));
  process.exit(same ? 0 : 1);
}

if (require.main === module) main();
