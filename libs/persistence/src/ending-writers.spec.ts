import { readdirSync, readFileSync } from 'node:fs';
import { join, sep } from 'node:path';

/**
 * One way to end a run (issue 35): a deliberation's status, its events and its ending are written
 * by conclave_stage_write alone (libs/persistence/src/sql), and every ending is built by endingWrite
 * (libs/deliberation/src/engine/ending.ts) and sent through endRun (one deliberation, through the
 * store) or endRuns (many, in one statement). This reads the source for a writer of its own: SQL
 * that sets a message's status or appends an event by hand, an ending write built outside those
 * two functions, a terminal message update written out by hand.
 */
const ROOT = join(__dirname, '..', '..', '..');

/** Production TypeScript of apps/, libs/ and scripts/: no tests, test doubles or frozen migrations. */
function sources(): { file: string; text: string }[] {
  const files: string[] = [];
  for (const top of ['apps', 'libs', 'scripts']) {
    for (const f of readdirSync(join(ROOT, top), { recursive: true }) as string[]) {
      const file = join(top, f).split(sep).join('/');
      if (!/\.tsx?$/.test(file) || /(\.|-)spec\.tsx?$/.test(file) || file.endsWith('.d.ts')) continue;
      if (/(^|\/)(node_modules|dist|test|testing|fixtures|migrations)\//.test(file)) continue;
      files.push(file);
    }
  }
  return files.map((file) => ({ file, text: readFileSync(join(ROOT, file), 'utf8') }));
}

/** Where `pattern` matches outside the files `allowed`, as file:line. */
function found(
  pattern: RegExp,
  allowed: (file: string) => boolean,
  keep: (match: RegExpExecArray) => boolean = () => true,
) {
  const places: string[] = [];
  for (const { file, text } of sources()) {
    if (allowed(file)) continue;
    for (const match of text.matchAll(new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`))) {
      if (keep(match)) places.push(`${file}:${text.slice(0, match.index).split('\n').length}`);
    }
  }
  return places;
}

const inSqlHome = (file: string) => file.startsWith('libs/persistence/src/sql/');

describe('one writer ends a run (issue 35)', () => {
  it('reads the source it should (the check is not vacuous)', () => {
    const files = sources().map((s) => s.file);
    expect(files.length).toBeGreaterThan(100);
    expect(files).toEqual(
      expect.arrayContaining([
        'libs/persistence/src/sql/stage-write.function.ts',
        'libs/deliberation/src/engine/ending.ts',
        'libs/persistence/src/end-runs.ts',
      ]),
    );
    // Each pattern below finds what it looks for where it is allowed.
    expect(found(/UPDATE\s+messages\b/i, (f) => !inSqlHome(f))).not.toEqual([]);
    expect(found(/\bendingWrite\(/, (f) => !f.endsWith('/ending.ts'))).not.toEqual([]);
  });

  it("no SQL outside conclave_stage_write sets a message's status", () => {
    // The SET list of each UPDATE of messages (up to its WHERE, FROM, RETURNING or the string's end).
    const setsStatus = found(
      /UPDATE\s+messages(?:\s+(?!SET\b)(?:AS\s+)?\w+)?\s+SET\s+([\s\S]*?)(?=\bWHERE\b|\bFROM\b|\bRETURNING\b|`|;)/i,
      inSqlHome,
      (match) => /(^|[\s,])status\s*=/i.test(match[1]),
    );
    expect(setsStatus).toEqual([]);
  });

  it('no SQL outside conclave_stage_write appends an event', () => {
    expect(found(/INSERT\s+INTO\s+deliberation_events\b/i, inSqlHome)).toEqual([]);
  });

  it('every ending write is endRun or endRuns (endingWrite is called nowhere else)', () => {
    expect(
      found(
        /\bendingWrite\(/,
        (file) =>
          file === 'libs/deliberation/src/engine/ending.ts' || file === 'libs/persistence/src/end-runs.ts',
      ),
    ).toEqual([]);
  });

  it('no message update with a final status other than complete is written by hand (endingUpdate builds it)', () => {
    // An object literal that ends a message: a `failed` or `cancelled` status beside its stage,
    // error or completion.
    expect(
      found(
        /\{[^{}]*\bstatus:\s*'(?:failed|cancelled)'[^{}]*\}/,
        (file) => file === 'libs/deliberation/src/engine/ending.ts',
        (match) => /\b(stage|error|completed):/.test(match[0]),
      ),
    ).toEqual([]);
  });
});
