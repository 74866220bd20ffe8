import { noneRemoved, runLifecycle, type LifecycleSteps, type RemovedCounts } from './run';

const NOW = new Date('2026-11-24T12:00:00Z');
const DAY = 86_400_000;

/** One conversation's rows, as the fake store counts them. */
const rowsOf = (n: number): RemovedCounts => ({
  ...noneRemoved(),
  conversations: n,
  messages: 2 * n,
  stage_rows: 5 * n,
  model_calls: 5 * n,
  events: 30 * n,
});

/**
 * An in-memory stand-in for LifecycleRepository: conversations and batches with an age in days,
 * and a log of every call, so the run's planning can be checked without a database.
 */
class FakeSteps implements LifecycleSteps {
  calls: string[] = [];
  chunkSizes: number[] = [];
  conversations: number[];
  batches: Map<string, { ageDays: number; items: number; busy?: boolean }>;

  constructor(
    conversationAges: number[],
    batches: Record<string, { ageDays: number; items: number; busy?: boolean }> = {},
  ) {
    this.conversations = [...conversationAges];
    this.batches = new Map(Object.entries(batches));
  }

  private expired = (ageDays: number, cutoff: Date) => NOW.getTime() - ageDays * DAY < cutoff.getTime();

  async ensureEventPartitions(): Promise<string[]> {
    this.calls.push('ensure');
    return ['deliberation_events_w20261221'];
  }

  async expiredBatches(cutoff: Date, limit: number, exclude: readonly string[]): Promise<string[]> {
    this.calls.push('batches');
    return [...this.batches]
      .filter(([id, b]) => this.expired(b.ageDays, cutoff) && !exclude.includes(id))
      .map(([id]) => id)
      .slice(0, limit);
  }

  async batchChunk(batchId: string, cutoff: Date, size: number) {
    this.calls.push(`batch ${batchId}`);
    const batch = this.batches.get(batchId);
    if (!batch || batch.busy || !this.expired(batch.ageDays, cutoff))
      return { removed: noneRemoved(), done: true };
    const n = Math.min(size, batch.items);
    this.chunkSizes.push(n);
    batch.items -= n;
    const removed = rowsOf(n);
    if (batch.items === 0) {
      this.batches.delete(batchId);
      removed.batches = 1;
    }
    return { removed, done: batch.items === 0 };
  }

  async conversationsChunk(cutoff: Date, size: number): Promise<RemovedCounts> {
    this.calls.push('conversations');
    const doomed = this.conversations.filter((age) => this.expired(age, cutoff)).slice(0, size);
    for (const age of doomed) this.conversations.splice(this.conversations.indexOf(age), 1);
    this.chunkSizes.push(doomed.length);
    return rowsOf(doomed.length);
  }

  async dropEventPartitions(): Promise<string[]> {
    this.calls.push('drop');
    return ['deliberation_events_w20260907'];
  }
}

describe('runLifecycle (chunk planning)', () => {
  it('with retention off only keeps the partitions ahead', async () => {
    const steps = new FakeSteps([400, 500]);
    const report = await runLifecycle(steps, { now: NOW, retentionDays: null, chunkSize: 10 });
    expect(steps.calls).toEqual(['ensure']);
    expect(report).toMatchObject({ cutoff: null, removed: noneRemoved(), chunks: 0, complete: true });
    expect(report.partitionsCreated).toEqual(['deliberation_events_w20261221']);
    expect(steps.conversations).toHaveLength(2);
  });

  it('deletes expired conversations in chunks of at most the chunk size, stopping at a short chunk', async () => {
    const ages = [...Array(23).fill(40), ...Array(7).fill(3)];
    const steps = new FakeSteps(ages);
    const report = await runLifecycle(steps, { now: NOW, retentionDays: 30, chunkSize: 5 });
    expect(steps.chunkSizes).toEqual([5, 5, 5, 5, 3]);
    expect(report.chunks).toBe(5);
    expect(report.removed).toEqual(rowsOf(23));
    expect(report.cutoff).toEqual(new Date(NOW.getTime() - 30 * DAY));
    expect(steps.conversations).toEqual(Array(7).fill(3)); // the recent ones stay
    expect(steps.calls.at(-1)).toBe('drop'); // partitions are dropped after the rows are gone
  });

  it('asks once more after a full last chunk, and then stops', async () => {
    const steps = new FakeSteps(Array(10).fill(90));
    await runLifecycle(steps, { now: NOW, retentionDays: 30, chunkSize: 5 });
    expect(steps.chunkSizes).toEqual([5, 5, 0]);
  });

  it('deletes expired batches first, each in chunks with the batch row last, and not the recent one', async () => {
    const steps = new FakeSteps([40], {
      old: { ageDays: 60, items: 12 },
      recent: { ageDays: 2, items: 4 },
    });
    const report = await runLifecycle(steps, { now: NOW, retentionDays: 30, chunkSize: 5 });
    expect(steps.calls).toEqual([
      'ensure',
      'batches',
      'batch old',
      'batch old',
      'batch old',
      'batches',
      'conversations',
      'drop',
    ]);
    expect(steps.chunkSizes).toEqual([5, 5, 2, 1]);
    expect(report.removed.batches).toBe(1);
    expect(report.removed.conversations).toBe(13);
    expect([...steps.batches.keys()]).toEqual(['recent']);
  });

  it('does not go round forever on a batch a chunk cannot delete (held by another transaction)', async () => {
    const steps = new FakeSteps([], {
      held: { ageDays: 60, items: 3, busy: true },
      free: { ageDays: 61, items: 1 },
    });
    const report = await runLifecycle(steps, { now: NOW, retentionDays: 30, chunkSize: 5 });
    expect(steps.calls.filter((c) => c === 'batch held')).toHaveLength(1);
    expect(report.removed.batches).toBe(1);
    expect([...steps.batches.keys()]).toEqual(['held']);
    expect(report.complete).toBe(true);
  });

  it('stops between chunks when the worker shuts down, reporting an incomplete run', async () => {
    const steps = new FakeSteps(Array(50).fill(100));
    let asked = 0;
    const report = await runLifecycle(steps, {
      now: NOW,
      retentionDays: 30,
      chunkSize: 5,
      stopping: () => ++asked > 3,
    });
    expect(report.complete).toBe(false);
    expect(steps.chunkSizes).toEqual([5, 5, 5]);
    expect(steps.calls).not.toContain('drop');
  });

  it('measures every chunk and keeps the longest', async () => {
    const steps = new FakeSteps(Array(12).fill(100));
    const ticks = [0, 10, 10, 45, 45, 50];
    const report = await runLifecycle(steps, {
      now: NOW,
      retentionDays: 30,
      chunkSize: 5,
      clock: () => ticks.shift() ?? 0,
    });
    expect(report.chunks).toBe(3);
    expect(report.longestChunkMs).toBe(35);
  });

  it('refuses a chunk size below one', async () => {
    await expect(
      runLifecycle(new FakeSteps([]), { now: NOW, retentionDays: 30, chunkSize: 0 }),
    ).rejects.toThrow(RangeError);
  });
});
