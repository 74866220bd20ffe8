import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import {
  isUuid,
  type BatchAccepted,
  type BatchResultLine,
  type BatchStatus,
  type BatchView,
  type ModeName,
} from '@conclave/contracts';
import { modeDefinition } from '@conclave/deliberation';
import { BatchDispatcher, returnedRows, toStageRow, type StageRowRecord } from '@conclave/persistence';
import { StageQueue } from '@conclave/redis';
import type { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { ApiError } from '../common/api-error';
import { IdempotencyRace, idempotencyContext, previousResponse, recordResponse } from '../common/idempotency';
import { RateLimiter } from '../common/rate-limiter';
import { RequestValidator, type ValidatedRequest } from '../deliberations/request-validator';
import { CONFIG, REDIS_PRODUCER, STAGE_QUEUE } from '@conclave/platform';
import { parseBatch, withDefaults } from './batch-input';

interface BatchRow {
  id: string;
  name: string | null;
  status: BatchStatus;
  total: number;
  concurrency: number;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
const RESULTS_PAGE = 500;

@Injectable()
export class BatchesService {
  private readonly logger = new Logger('batches');
  readonly dispatcher: BatchDispatcher;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly dataSource: DataSource,
    private readonly validator: RequestValidator,
    @Inject(STAGE_QUEUE) queue: StageQueue,
    @Inject(REDIS_PRODUCER) redis: Redis,
    private readonly limiter: RateLimiter,
  ) {
    this.dispatcher = new BatchDispatcher(dataSource, queue, redis, config.redisPrefix);
  }

  async submit(
    userId: string,
    body: unknown,
    uploaded: Record<string, unknown>[] | undefined,
    idempotencyKey: string | string[] | undefined,
  ): Promise<BatchAccepted> {
    const idempotency = idempotencyContext(userId, 'batch', idempotencyKey, { body, uploaded });
    if (idempotency) {
      const earlier = await previousResponse<BatchAccepted>(this.dataSource, idempotency);
      if (earlier) return earlier;
    }
    const parsed = parseBatch(body, uploaded);
    if (!parsed.ok) throw ApiError.invalid(parsed.fields);
    const { batch } = parsed;

    // Every item is checked before anything is stored: one bad item rejects the whole batch.
    const requests: ValidatedRequest[] = [];
    const fields: Record<string, string> = {};
    const badItems: number[] = [];
    for (let i = 0; i < batch.items.length; i++) {
      const item = withDefaults(batch.defaults, batch.items[i]);
      if (item.conversationId !== undefined) {
        fields[`items[${i}].conversationId`] = 'batch items start new conversations';
        badItems.push(i);
        continue;
      }
      const outcome = await this.validator.validate(item);
      if (outcome.ok) requests.push(outcome.request);
      else {
        badItems.push(i);
        for (const [field, message] of Object.entries(outcome.fields))
          fields[`items[${i}].${field}`] = message;
      }
    }
    if (badItems.length > 0) {
      const shown =
        badItems.slice(0, 20).join(', ') + (badItems.length > 20 ? `, … (${badItems.length} in all)` : '');
      throw new ApiError(
        400,
        `${badItems.length} of ${batch.items.length} items are invalid: items ${shown}`,
        fields,
      );
    }

    const [{ active }]: { active: number }[] = await this.dataSource.query(
      `SELECT count(*)::int AS active FROM batches WHERE user_id = $1 AND status IN ('queued', 'running')`,
      [userId],
    );
    const allowed = this.config.abuse.activeBatchesPerUser;
    if (active >= allowed) {
      throw new ApiError(
        429,
        `You have ${active} batches queued or running, the most allowed at once is ${allowed}: wait for one to finish or cancel one`,
      );
    }
    // Items are deliberations too: each takes one from the key's hourly batch-item budget.
    await this.limiter.take(userId, 'batchItems', requests.length);

    const batchId = randomUUID();
    try {
      await this.dataSource.transaction(async (manager) => {
        await manager.query(
          `INSERT INTO batches (id, user_id, name, status, total, concurrency, generate_titles, defaults)
           VALUES ($1, $2, $3, 'queued', $4, $5, $6, $7)`,
          [
            batchId,
            userId,
            batch.name,
            requests.length,
            batch.concurrency,
            batch.generateTitles,
            batch.defaults,
          ],
        );
        const conversationIds = requests.map(() => randomUUID());
        const messageIds = requests.map(() => randomUUID());
        // Bulk inserts: ten thousand items are three statements, not thirty thousand.
        await manager.query(
          `INSERT INTO conversations (id, user_id, mode) SELECT c, $2, m FROM unnest($1::uuid[], $3::text[]) AS t(c, m)`,
          [conversationIds, userId, requests.map((r) => r.mode)],
        );
        await manager.query(
          `INSERT INTO messages (conversation_id, role, content, status, turn, mode)
           SELECT c, 'user', q, 'complete', 1, m FROM unnest($1::uuid[], $2::text[], $3::text[]) AS t(c, q, m)`,
          [
            conversationIds,
            requests.map((r) => r.definition.userContent?.(r.question, r.config) ?? r.question),
            requests.map((r) => r.mode),
          ],
        );
        await manager.query(
          `INSERT INTO messages (id, conversation_id, role, content, status, turn, mode, config, stage, needs_title, batch_id, batch_index)
           SELECT id, c, 'assistant', '', 'queued', 1, m, cfg, st, $6, $7, idx - 1
           FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[], $5::text[]) WITH ORDINALITY AS t(id, c, m, cfg, st, idx)`,
          [
            messageIds,
            conversationIds,
            requests.map((r) => r.mode),
            requests.map((r) => JSON.stringify(r.config)),
            requests.map((r) => r.definition.firstStage),
            batch.generateTitles,
            batchId,
          ],
        );
        if (idempotency)
          await recordResponse(manager, idempotency, { batchId, total: requests.length, status: 'queued' });
      });
    } catch (error) {
      if (error instanceof IdempotencyRace && idempotency) {
        const earlier = await previousResponse<BatchAccepted>(this.dataSource, idempotency);
        if (earlier) return earlier;
      }
      throw error;
    }
    // Stored first; if the queue is down now, the workers' reconciler starts the batch later.
    await this.dispatcher
      .dispatch(batchId)
      .catch((error: unknown) => this.logger.warn(`batch ${batchId}: ${String(error)}`));
    return { batchId, total: requests.length, status: 'queued' };
  }

  private async ownedBatch(userId: string, batchId: string): Promise<BatchRow> {
    const [row]: BatchRow[] = isUuid(batchId)
      ? await this.dataSource.query('SELECT * FROM batches WHERE id = $1 AND user_id = $2', [batchId, userId])
      : [];
    if (!row) throw ApiError.notFound(`batch ${batchId}`);
    return row;
  }

  async assertOwned(userId: string, batchId: string): Promise<void> {
    await this.ownedBatch(userId, batchId);
  }

  async view(userId: string, batchId: string): Promise<BatchView> {
    return this.snapshot(await this.ownedBatch(userId, batchId));
  }

  async snapshotById(batchId: string): Promise<BatchView | null> {
    const [row]: BatchRow[] = await this.dataSource.query('SELECT * FROM batches WHERE id = $1', [batchId]);
    return row ? this.snapshot(row) : null;
  }

  private async snapshot(batch: BatchRow): Promise<BatchView> {
    const counts: { status: string; n: number }[] = await this.dataSource.query(
      `SELECT status, COUNT(*)::int AS n FROM messages WHERE batch_id = $1 AND role = 'assistant' GROUP BY status`,
      [batch.id],
    );
    const count = (status: string) => counts.find((c) => c.status === status)?.n ?? 0;
    const [usage]: { prompt: string | null; completion: string | null; cost: string | null }[] =
      await this.dataSource.query(
        `SELECT SUM(mc.prompt_tokens) AS prompt, SUM(mc.completion_tokens) AS completion, SUM(mc.cost_usd) AS cost
       FROM model_calls mc JOIN messages m ON m.id = mc.message_id WHERE m.batch_id = $1`,
        [batch.id],
      );
    const view: BatchView = {
      batchId: batch.id,
      name: batch.name,
      status: batch.status,
      concurrency: batch.concurrency,
      total: batch.total,
      queued: count('queued'),
      running: count('running'),
      complete: count('complete'),
      failed: count('failed'),
      cancelled: count('cancelled'),
      createdAt: iso(batch.created_at) ?? '',
      startedAt: iso(batch.started_at),
      finishedAt: iso(batch.finished_at),
      usage: {
        promptTokens: Number(usage?.prompt ?? 0),
        completionTokens: Number(usage?.completion ?? 0),
        costUsd: Number(usage?.cost ?? 0),
      },
      etaSeconds: null,
    };
    const done = view.complete + view.failed;
    const remaining = view.queued + view.running;
    if (batch.finished_at || remaining === 0) view.etaSeconds = 0;
    else if (batch.started_at && done > 0 && batch.status === 'running') {
      const elapsed = (Date.now() - new Date(batch.started_at).getTime()) / 1000;
      view.etaSeconds = Math.round((remaining * elapsed) / done);
    }
    return view;
  }

  async list(userId: string): Promise<BatchView[]> {
    const rows: BatchRow[] = await this.dataSource.query(
      'SELECT * FROM batches WHERE user_id = $1 ORDER BY created_at DESC LIMIT 200',
      [userId],
    );
    return Promise.all(rows.map((row) => this.snapshot(row)));
  }

  async cancel(userId: string, batchId: string): Promise<BatchView> {
    const batch = await this.ownedBatch(userId, batchId);
    if (batch.status === 'queued' || batch.status === 'running') {
      await this.dataSource.transaction(async (manager) => {
        await manager.query(`SELECT id FROM batches WHERE id = $1 FOR NO KEY UPDATE`, [batchId]);
        await manager.query(`UPDATE batches SET status = 'cancelled', cancelled_at = now() WHERE id = $1`, [
          batchId,
        ]);
      });
      // Queued items stop at once; running ones finish. An item a worker holds at this instant is
      // starting: skipping it (instead of waiting on its row lock) avoids a deadlock with the
      // worker, and the next pass finds it either running or still queued.
      for (let pass = 0; pass < 5; pass++) {
        const left = returnedRows(
          await this.dataSource.query(
            `UPDATE messages SET status = 'cancelled', error = 'The batch was cancelled.', stage = NULL,
               completed_at = now(), updated_at = now()
             WHERE id IN (SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant' AND status = 'queued'
                          FOR UPDATE SKIP LOCKED)
             RETURNING id`,
            [batchId],
          ),
        );
        const [{ queued }]: { queued: number }[] = await this.dataSource.query(
          `SELECT COUNT(*)::int AS queued FROM messages WHERE batch_id = $1 AND role = 'assistant' AND status = 'queued'`,
          [batchId],
        );
        if (queued === 0 || (left.length === 0 && pass > 0)) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await this.dispatcher.closeIfDone(batchId);
      await this.dispatcher.notify(batchId);
    }
    return this.view(userId, batchId);
  }

  /** One line per item in submission order, read page by page so memory stays flat. */
  async *results(userId: string, batchId: string): AsyncGenerator<BatchResultLine[]> {
    await this.ownedBatch(userId, batchId);
    let after = -1;
    for (;;) {
      const page: {
        id: string;
        conversation_id: string;
        mode: ModeName;
        status: string;
        error: string | null;
        config: unknown;
        batch_index: number;
        question: string;
      }[] = await this.dataSource.query(
        `SELECT a.id, a.conversation_id, a.mode, a.status, a.error, a.config, a.batch_index, u.content AS question
         FROM messages a JOIN messages u ON u.conversation_id = a.conversation_id AND u.role = 'user' AND u.turn = 1
         WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.batch_index > $2
         ORDER BY a.batch_index LIMIT $3`,
        [batchId, after, RESULTS_PAGE],
      );
      if (page.length === 0) return;
      const records: (StageRowRecord & { message_id: string })[] = await this.dataSource.query(
        `SELECT message_id, stage_type, stage_order, model, role, content, parsed_data, response_time_ms, prompt_tokens,
           completion_tokens, cost_usd, participant
         FROM deliberation_stages WHERE message_id = ANY($1) ORDER BY stage_order, participant NULLS FIRST, created_at, id`,
        [page.map((m) => m.id)],
      );
      const byMessage = new Map<string, StageRowRecord[]>();
      for (const record of records)
        byMessage.set(record.message_id, [...(byMessage.get(record.message_id) ?? []), record]);
      yield page.map((m) => {
        const definition = modeDefinition(m.mode);
        const rows = (byMessage.get(m.id) ?? []).map(toStageRow);
        const headline = definition ? definition.headline(definition.load(rows, m.config, null)) : null;
        return {
          index: m.batch_index,
          messageId: m.id,
          conversationId: m.conversation_id,
          mode: m.mode,
          status: m.status,
          error: m.error,
          question: m.question,
          answer: headline?.answer ?? null,
          headline: headline?.details ?? null,
          resultUrl: `/api/deliberations/${m.id}`,
        };
      });
      after = page[page.length - 1].batch_index;
    }
  }
}
