import { createHash, randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { isStoreUnavailable } from './unavailable';

/**
 * The model_calls stage of calls whose answers could not be stored (see UnstoredCalls): never a
 * mode's stage, and left out wherever model_calls stand for a stage's outcomes. Sums of tokens and
 * cost (usage, monthly and batch budgets, reports) count them like any call.
 */
export const UNSTORED_CALLS_STAGE = 'unstored';

/** A model call that was made, and paid for, but whose outcome could not be stored with its stage. */
export interface UnstoredCall {
  messageId: string;
  /** The stage it was made for, and its key there. */
  stage: string;
  key: string;
  model: string;
  ok: boolean;
  responseTimeMs: number;
  promptTokens: number | null;
  completionTokens: number | null;
  costUsd: number | null;
  simulated: boolean;
  /**
   * callDigest of its answer (or error): with the key, model, outcome and response time it tells
   * this call's own row, written by a write whose reply was lost, from a later run's call.
   */
  digest: string;
}

/**
 * What tells a call's stored row apart without its text: the MD5 (hex) of its answer, or of its
 * error when it failed, as PostgreSQL's md5() gives it for the stored content or error.
 */
export function callDigest(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex');
}

/**
 * Keeps the usage of model calls whose outcomes could not be stored (PostgreSQL away for longer
 * than a stage waits, or a write refused), and writes it to model_calls as usage-only rows (stage
 * UNSTORED_CALLS_STAGE, no answer) once PostgreSQL takes it: so usage, cost and budgets count
 * every call made, as the provider's bill does. A call whose own outcome did reach model_calls
 * before it was given up (a write applied whose reply was lost) is not counted twice: that row is
 * told by its key, model, outcome, response time and the digest of its text, not by any clock (a
 * later run's call of the same key is a call of its own, and counted); one whose
 * deliberation is gone meanwhile is dropped. Holds at most `limit` calls (a few hundred bytes each);
 * past that the oldest are dropped and said so in the log.
 */
export class UnstoredCalls {
  /** Each with the call_key of its row, chosen once: a write tried again after a lost reply conflicts. */
  private pending: (UnstoredCall & { rowKey: string })[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  private dropped = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly options: { limit?: number; intervalMs?: number; log?: (message: string) => void } = {},
  ) {}

  /** Calls waiting to be written. */
  get size(): number {
    return this.pending.length;
  }

  add(calls: UnstoredCall[]): void {
    if (calls.length === 0) return;
    this.pending.push(
      ...calls.map((call) => ({ ...call, rowKey: `${call.stage}:${call.key}:${randomUUID()}` })),
    );
    const over = this.pending.length - (this.options.limit ?? 100_000);
    if (over > 0) {
      this.pending.splice(0, over);
      this.dropped += over;
      this.options.log?.(`dropped the usage of ${over} unstored model call(s): too many waiting`);
    }
    this.schedule(0);
  }

  /** Writes what waits now (once more if more came meanwhile); resolves when done or given up for now. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.pending.length === 0) return;
    const batch = this.pending.splice(0, 500);
    this.writing = this.write(batch).finally(() => {
      this.writing = null;
    });
    await this.writing;
  }

  /** Stops the timer after a last attempt to write what waits. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // Every batch that waits, while the writes get somewhere (storage away: they stop at once).
    for (let before = this.pending.length; before > 0; before = this.pending.length) {
      await this.flush().catch(() => undefined);
      if (this.pending.length >= before) break;
    }
    if (this.pending.length > 0) {
      this.options.log?.(`the usage of ${this.pending.length} unstored model call(s) was not written`);
    }
  }

  /**
   * Writes in batches of 500, one after the other while PostgreSQL takes them (the backlog of an
   * outage drains as fast as it accepts the inserts); after a batch that did not go through, waits
   * `intervalMs` (1 s) before trying again.
   */
  private schedule(delayMs: number): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      const before = this.pending.length;
      void this.flush().finally(() => {
        if (this.pending.length === 0) return;
        this.schedule(this.pending.length < before ? 0 : (this.options.intervalMs ?? 1000));
      });
    }, delayMs);
    this.timer.unref();
  }

  private async write(batch: (UnstoredCall & { rowKey: string })[]): Promise<void> {
    const rows = batch.map((call) => ({
      message_id: call.messageId,
      call_key: call.rowKey,
      stage: call.stage,
      key: call.key,
      model: call.model,
      ok: call.ok,
      response_time_ms: Math.max(0, Math.round(call.responseTimeMs)),
      prompt_tokens: call.promptTokens,
      completion_tokens: call.completionTokens,
      cost_usd: call.costUsd,
      simulated: call.simulated,
      digest: call.digest,
    }));
    try {
      await this.dataSource.query(
        `INSERT INTO model_calls (message_id, stage, call_key, model, ok, error, response_time_ms,
           prompt_tokens, completion_tokens, cost_usd, simulated)
         SELECT r.message_id, $2, r.call_key, r.model, r.ok, 'not stored: storage was unavailable',
           r.response_time_ms, r.prompt_tokens, r.completion_tokens, r.cost_usd, r.simulated
         FROM jsonb_to_recordset($1::jsonb) AS r(message_id uuid, call_key text, stage text, key text,
           model text, ok boolean, response_time_ms int, prompt_tokens int, completion_tokens int,
           cost_usd numeric, simulated boolean, digest text)
         WHERE EXISTS (SELECT 1 FROM messages m WHERE m.id = r.message_id)
           AND NOT EXISTS (SELECT 1 FROM model_calls c WHERE c.message_id = r.message_id
             AND c.stage = r.stage AND c.call_key = r.key AND c.model = r.model AND c.ok = r.ok
             AND c.response_time_ms = r.response_time_ms
             AND md5(COALESCE(c.content, c.error, '')) = r.digest)
         ON CONFLICT DO NOTHING`,
        [JSON.stringify(rows), UNSTORED_CALLS_STAGE],
      );
    } catch (error) {
      if (isStoreUnavailable(error)) {
        // Still away: these wait for the next attempt, ahead of any that came meanwhile.
        this.pending.unshift(...batch);
        return;
      }
      this.options.log?.(
        `could not record the usage of ${batch.length} unstored model call(s): ${String(error)}`,
      );
    }
  }
}

/** A model call that was in flight on a worker that died: sent, and billed, but never answered here. */
export interface LostCall {
  messageId: string;
  stage: string;
  key: string;
  model: string;
  /** The dead worker's id, and when the call began on its clock (ms): together they name the call. */
  worker: string;
  startedAt: number;
  /** When the dead worker's last heartbeat listed it (its clock, ms). */
  listedAt: number;
}

/** The error of a lost call's usage-only row: what is known of it. */
export const LOST_CALL_ERROR = 'not stored: the worker making the call stopped before its answer arrived';

/** The call_key of a lost call's usage-only row: the same for every worker that records it. */
export const lostCallRowKey = (call: LostCall): string =>
  `lost:${call.worker}:${call.stage}:${call.key}:${call.startedAt}`;

/**
 * Writes usage-only rows (stage UNSTORED_CALLS_STAGE) for calls that died in flight with their
 * worker, once each however many workers record them (call_key from lostCallRowKey, ON CONFLICT DO
 * NOTHING). Their tokens and cost are unknown (null: the provider's reply never arrived), so
 * usage and budgets count the call but add no cost for it. To be called before the dead worker's
 * stage runs again: a call whose own row is stored (it ended, and was stored, between the
 * heartbeat that listed it and the death) is not counted twice. Resolves with how many rows were
 * written.
 */
export async function recordLostCalls(dataSource: DataSource, calls: LostCall[]): Promise<number> {
  if (calls.length === 0) return 0;
  const rows = calls.map((call) => ({
    message_id: call.messageId,
    call_key: lostCallRowKey(call),
    stage: call.stage,
    key: call.key,
    model: call.model,
    response_time_ms: Math.max(0, Math.round(call.listedAt - call.startedAt)),
    simulated: call.model.startsWith('sim/'),
  }));
  const written: unknown[] = await dataSource.query(
    `INSERT INTO model_calls (message_id, stage, call_key, model, ok, error, response_time_ms,
       prompt_tokens, completion_tokens, cost_usd, simulated)
     SELECT r.message_id, $2, r.call_key, r.model, false, $3, r.response_time_ms, NULL, NULL, NULL, r.simulated
     FROM jsonb_to_recordset($1::jsonb) AS r(message_id uuid, call_key text, stage text, key text,
       model text, response_time_ms int, simulated boolean)
     WHERE EXISTS (SELECT 1 FROM messages m WHERE m.id = r.message_id)
       AND NOT EXISTS (SELECT 1 FROM model_calls c WHERE c.message_id = r.message_id
         AND c.stage = r.stage AND c.call_key = r.key)
     ON CONFLICT DO NOTHING
     RETURNING 1`,
    [JSON.stringify(rows), UNSTORED_CALLS_STAGE, LOST_CALL_ERROR],
  );
  return written.length;
}
