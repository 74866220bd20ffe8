import { afterStored, carryNext, openNext } from './next-stage';
import { inStoredOrder } from './stored-order';
import { StopHearing } from './stop-hearing';
import type {
  AnyModeDefinition,
  DeliberationContext,
  LoadedDeliberation,
  PlannedCall,
  StageRow,
} from './types';

const row = (stageOrder: number, participant: number | null, content: string): StageRow => ({
  stageType: `s${stageOrder}`,
  stageOrder,
  model: 'sim/a',
  role: null,
  content,
  parsedData: null,
  responseTimeMs: null,
  promptTokens: null,
  completionTokens: null,
  costUsd: null,
  participant,
});

/** A mode whose next stage asks one call per row, its prompt the row's words, in the rows' order. */
const mode = {
  enforcesDeliberationCap: false,
  plan: (_stage: string, ctx: DeliberationContext<unknown>): PlannedCall[] =>
    ctx.rows.map((r, i) => ({
      key: `k${i}`,
      participant: r.participant ?? 0,
      model: 'sim/a',
      messages: [{ role: 'user', content: r.content }],
    })),
  startEvents: (stage: string) => [{ key: `${stage}_start`, type: `${stage}_start`, payload: {} }],
} as unknown as AnyModeDefinition;

const loaded: LoadedDeliberation = {
  messageId: 'm1',
  conversationId: 'c1',
  mode: 'council',
  status: 'running',
  stage: 'stage2',
  needsTitle: false,
  createdAt: new Date(),
  batchId: null,
  question: 'Q',
  config: {},
  history: [],
  rows: [row(1, 1, 'one')],
  outcomes: {},
};

const clock = { now: Date.now, hearing: new StopHearing(), deliberationCapMs: 600_000 };
const reduction = {
  rows: [row(2, 2, 'b'), row(2, 1, 'a')],
  events: [],
  transition: { kind: 'next', stage: 'stage3' } as const,
};

describe('the next stage', () => {
  it("is opened from the stored rows and the reduction's, in the store's order", () => {
    const next = openNext(clock, loaded, mode, 'stage2', reduction, [], null);
    expect(next?.calls.map((c) => [c.key, c.participant, c.messages[0].content])).toEqual([
      ['k0', 1, 'one'],
      ['k1', 1, 'a'],
      ['k2', 2, 'b'],
    ]);
    expect(next?.opening.map((e) => e.key)).toEqual([
      'stage3_start',
      'model_progress:stage3:k0:started',
      'model_progress:stage3:k1:started',
      'model_progress:stage3:k2:started',
    ]);
  });

  it('is carried with the state the store answered it stored, its calls planned from that', () => {
    const next = openNext(clock, loaded, mode, 'stage2', reduction, [], null);
    if (!next) throw new Error('not opened');
    // The store's answer: the rows from stage order 2 on, in its words.
    const stored = {
      from: 2,
      rows: inStoredOrder(reduction.rows).map((r) => ({ ...r, content: `${r.content}!` })),
      outcomes: { stage2: [] },
    };
    const carried = carryNext(clock, loaded, mode, next, stored);
    expect(carried?.loaded).toMatchObject({ stage: 'stage3', status: 'running', stageOpenedAt: null });
    expect(carried?.loaded.rows).toEqual([loaded.rows[0], ...stored.rows]);
    expect(carried?.loaded.outcomes).toEqual({ stage2: [] });
    expect(carried?.calls.map((c) => c.messages[0].content)).toEqual(['one', 'a!', 'b!']);
    expect(carried?.opening).toBe(next.opening);
  });

  it('is not carried without the answer, or when the calls differ from those its opening announced', () => {
    const next = openNext(clock, loaded, mode, 'stage2', reduction, [], null);
    if (!next) throw new Error('not opened');
    expect(carryNext(clock, loaded, mode, next, undefined)).toBeNull();
    // The store kept one row fewer than the engine sent (say two with one identity).
    const stored = { from: 2, rows: [reduction.rows[0]], outcomes: {} };
    expect(carryNext(clock, loaded, mode, next, stored)).toBeNull();
  });
});

describe('afterStored', () => {
  it('keeps the rows of an earlier stage order and the outcomes of other stages, and takes the rest from the answer', () => {
    const before = { rows: [row(1, 1, 'one'), row(2, 1, 'old two')], outcomes: { stage1: [], stage2: [] } };
    const stored = { from: 2, rows: [row(2, 1, 'two'), row(3, null, 'three')], outcomes: { stage2: [] } };
    expect(afterStored(before, stored).rows.map((r) => r.content)).toEqual(['one', 'two', 'three']);
    expect(afterStored(before, { from: null, rows: [], outcomes: {} }).rows).toBe(before.rows);
  });
});

describe('inStoredOrder', () => {
  it('orders rows by stage order, then participant (none first), keeping the order of equals', () => {
    const rows = [row(2, 1, 'c'), row(1, 2, 'b'), row(2, null, 'x'), row(1, 1, 'a'), row(2, 1, 'd')];
    expect(inStoredOrder(rows).map((r) => r.content)).toEqual(['a', 'b', 'x', 'c', 'd']);
    expect(rows.map((r) => r.content)).toEqual(['c', 'b', 'x', 'a', 'd']);
  });
});
