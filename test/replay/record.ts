/**
 * Replay recording: runs a fixed list of simulated deliberations (scenarios.ts) on the real stack
 * in this process — gateway, worker, a scratch PostgreSQL database, a Redis key prefix of its own —
 * and writes, per scenario, what the outside can see: the events delivered over Socket.IO, the
 * API's view of the deliberation (GET /api/deliberations/:id), and the rows stored (messages,
 * stage rows, model calls, events, read with SQL). Normalized (normalize.ts) so that two runs of
 * the same code give the same file; a restructuring that changes no behaviour gives the same file
 * too. Compare two recordings with compare.ts.
 *
 *   node -r ts-node/register/transpile-only -r tsconfig-paths/register test/replay/record.ts OUT.json
 *   (npm run replay:record -- OUT.json; optional: --only <substring of scenario names>)
 *
 * Only public surfaces are used (HTTP and Socket.IO through TestStack, SQL on the tables), so the
 * tool survives a restructuring of the code behind them.
 */
import { writeFileSync } from 'node:fs';
import type { DeliveredEvent } from '@conclave/contracts';
import { TestStack } from '../support/harness';
import {
  CONCURRENT_EVENTS,
  orderEvents,
  sortConcurrent,
  sortKeys,
  withCallsSorted,
  withOrdinals,
  withoutClock,
} from './normalize';
import { SCENARIOS, type Scenario } from './scenarios';

/** The settings every recording runs with: fast simulated calls, short default timeouts. */
export const REPLAY_ENV: Record<string, string> = {
  SIM_LATENCY_MS: '5',
  SIM_SEED: 'replay',
  // A `timeout` directive hangs until the call's timeout: the default one is kept short.
  MODEL_TIMEOUT_MS: '2000',
  RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '100000',
  RATE_LIMIT_REQUESTS_PER_MINUTE: '100000',
  RATE_LIMIT_BATCH_ITEMS_PER_HOUR: '100000',
};

/**
 * Vote and debate shuffle their labels with the message's id as the seed, and the simulated
 * voters' choices follow the shuffled prompt: with random ids the outcome itself is random. The
 * scratch database therefore hands out ids from a sequence (ID_PREFIX + a counter that restarts at
 * scenario × 1000), through the column defaults of `messages` and `conversations`. If the code
 * under test ever stops taking those ids from the database default, the recording stops with an
 * error instead of recording noise. Batch items get their ids in the gateway (crypto.randomUUID):
 * the batch scenario therefore uses council items only (council does not shuffle).
 */
const ID_PREFIX = '00000000-0000-4000-8000-';
const PIN_IDS = `
  CREATE SEQUENCE IF NOT EXISTS replay_ids;
  CREATE OR REPLACE FUNCTION replay_uuid() RETURNS uuid LANGUAGE sql VOLATILE AS
    $$ SELECT ('${ID_PREFIX}' || lpad(to_hex(nextval('replay_ids')), 12, '0'))::uuid $$;
  ALTER TABLE conversations ALTER COLUMN id SET DEFAULT replay_uuid();
  ALTER TABLE messages ALTER COLUMN id SET DEFAULT replay_uuid();
`;

type Row = Record<string, unknown>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false>,
  timeoutMs = 60_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function contiguous(seqs: number[]): boolean {
  return seqs.every((seq, i) => Number(seq) === i + 1);
}

/** Delivered events: contiguity checked, concurrent runs sorted, seq kept on the mode's own events. */
function deliveredEvents(events: DeliveredEvent[]) {
  return {
    seqContiguous: contiguous(events.map((e) => e.seq)),
    events: orderEvents(events).map((event) =>
      CONCURRENT_EVENTS.has(event.type) ? { ...event, seq: '<concurrent>' } : event,
    ),
  };
}

class Recorder {
  constructor(readonly stack: TestStack) {}

  /**
   * The same deliberation's events over SSE (GET /api/deliberations/:id/events; the server closes
   * the stream after the terminal event), read after its end. Recorded as `sameAsSocket` when the
   * frames carry the events the socket delivered, otherwise in full.
   */
  async sse(messageId: string, socketEvents: DeliveredEvent[]) {
    const response = await fetch(`${this.stack.baseUrl}/api/deliberations/${messageId}/events`);
    const text = await response.text();
    const frames = text
      .split('\n\n')
      .filter((block) => block.includes('data: '))
      .map((block) => {
        const field = (name: string) => new RegExp(`^${name}: (.*)$`, 'm').exec(block)?.[1];
        return {
          event: field('event'),
          id: field('id'),
          data: JSON.parse(field('data') ?? '{}') as DeliveredEvent,
        };
      });
    const same =
      response.status === 200 &&
      frames.length === socketEvents.length &&
      frames.every(
        (f, i) =>
          f.event === f.data.type &&
          f.id === String(f.data.seq) &&
          JSON.stringify(sortKeys(f.data)) === JSON.stringify(sortKeys(socketEvents[i])),
      );
    if (same) return { status: response.status, sameAsSocket: true };
    return {
      status: response.status,
      sameAsSocket: false,
      frames: frames.map((f) => ({ event: f.event, id: f.id, data: this.clean(f.data) })),
    };
  }

  /** The stored rows of one conversation, each table in an order that does not depend on timing. */
  async rows(conversationId: string) {
    const db = this.stack.db;
    const [conversation] = (await db.query('SELECT * FROM conversations WHERE id = $1', [
      conversationId,
    ])) as Row[];
    const messages = (await db.query(
      'SELECT * FROM messages WHERE conversation_id = $1 ORDER BY turn, created_at, role',
      [conversationId],
    )) as Row[];
    const ids = messages.map((m) => m.id);
    // Stage rows of one stage are written together; their order inside a stage (and the calls',
    // which settle concurrently) is sorted by content.
    const stages = (await db.query(
      'SELECT * FROM deliberation_stages WHERE message_id = ANY($1::uuid[]) ORDER BY message_id, stage_order',
      [ids],
    )) as Row[];
    const calls = (await db.query(
      'SELECT * FROM model_calls WHERE message_id = ANY($1::uuid[]) ORDER BY message_id',
      [ids],
    )) as Row[];
    const events = (await db.query(
      'SELECT * FROM deliberation_events WHERE message_id = ANY($1::uuid[]) ORDER BY message_id, seq',
      [ids],
    )) as Row[];
    const byMessage = <T extends Row>(rows: T[], sort: (group: T[]) => T[]) =>
      ids.flatMap((id) => sort(rows.filter((r) => r.message_id === id)));
    return {
      conversation: this.clean(conversation),
      messages: messages.map((m) => this.clean(m)),
      // message_id, then stage_order (SQL), then content within a stage_order
      deliberation_stages: byMessage(
        stages.map((r) => this.clean(r)),
        (group) => {
          const orders = [...new Set(group.map((r) => Number(r.stage_order)))].sort((a, b) => a - b);
          return orders.flatMap((o) => sortConcurrent(group.filter((r) => Number(r.stage_order) === o)));
        },
      ),
      // calls settle concurrently: sorted by content within the message
      model_calls: byMessage(
        calls.map((r) => this.clean(r)),
        (group) => sortConcurrent(group),
      ),
      deliberation_events: byMessage(events, (group) => {
        const ok = contiguous(group.map((e) => Number(e.seq)));
        return orderEvents(group.map((r) => this.clean(r))).map((event) => ({
          ...event,
          ...(CONCURRENT_EVENTS.has(String(event.type)) ? { seq: '<concurrent>' } : {}),
          ...(ok ? {} : { seqNotContiguous: true }),
        }));
      }),
    };
  }

  clean(row: unknown): Row {
    return withCallsSorted(withoutClock(row, this.stack.baseUrl)) as Row;
  }

  async view(messageId: string) {
    const response = await this.stack.api('GET', `/api/deliberations/${messageId}`);
    return { status: response.status, body: this.clean(response.body) };
  }

  /** Resets the id sequence so that a scenario's ids do not depend on the scenarios before it. */
  async pinIds(index: number): Promise<void> {
    await this.stack.db.query(`SELECT setval('replay_ids', $1, false)`, [(index + 1) * 1000]);
  }

  checkPinned(messageId: string): void {
    if (!messageId.startsWith(ID_PREFIX)) {
      throw new Error(
        `message id ${messageId} was not taken from the column default: the vote/debate label shuffle is not pinned (see PIN_IDS in record.ts)`,
      );
    }
  }

  /** One deliberation: accepted, followed to its end, viewed, its rows read. */
  async turn(body: Record<string, unknown>) {
    const response = await this.stack.api<{ conversationId: string; messageId: string }>(
      'POST',
      '/api/deliberations',
      { body },
    );
    if (response.status !== 202)
      return { accepted: { status: response.status, body: this.clean(response.body) } };
    const { messageId, conversationId } = response.body;
    this.checkPinned(messageId);
    const delivered = await this.stack.follow(messageId, { timeoutMs: 60_000 });
    return {
      conversationId,
      messageId,
      accepted: { status: response.status, body: response.body },
      delivered: deliveredEvents(delivered.map((e) => this.clean(e) as DeliveredEvent)),
      sse: await this.sse(messageId, delivered),
      view: await this.view(messageId),
    };
  }

  async run(scenario: Scenario): Promise<unknown> {
    switch (scenario.kind) {
      case 'follow-up': {
        const turns = [];
        let conversationId: string | undefined;
        for (const body of scenario.turns) {
          const turn = await this.turn(conversationId ? { ...body, conversationId } : body);
          conversationId ??= turn.conversationId;
          turns.push(turn);
        }
        const conversation = conversationId
          ? await this.stack.api('GET', `/api/conversations/${conversationId}`)
          : null;
        return {
          request: scenario.turns,
          turns,
          conversation: conversation && { status: conversation.status, body: this.clean(conversation.body) },
          rows: conversationId ? await this.rows(conversationId) : null,
        };
      }
      case 'cancel':
        return this.cancel(scenario.body, scenario.startedCalls);
      case 'batch':
        return this.batch(scenario.body);
      default: {
        const turn = await this.turn(scenario.body);
        return {
          request: scenario.body,
          ...turn,
          rows: turn.conversationId ? await this.rows(turn.conversationId) : null,
        };
      }
    }
  }

  /**
   * Starts a deliberation whose calls hang, waits until all of them are under way (and 300 ms for
   * the fast title call to settle), then stops it with POST /api/deliberations/:id/cancel.
   */
  async cancel(body: Record<string, unknown>, startedCalls: number) {
    const accepted = await this.stack.deliberate(body);
    this.checkPinned(accepted.messageId);
    const followed = this.stack.follow(accepted.messageId, { timeoutMs: 60_000 });
    await until('calls under way', async () => {
      const [{ n }] = (await this.stack.db.query(
        `SELECT count(*)::int AS n FROM deliberation_events
          WHERE message_id = $1 AND type = 'model_progress' AND payload->>'state' = 'started'`,
        [accepted.messageId],
      )) as { n: number }[];
      return n >= startedCalls;
    });
    await sleep(300);
    const cancelled = await this.stack.api<Row>('POST', `/api/deliberations/${accepted.messageId}/cancel`);
    const delivered = await followed;
    // The answer to the cancel shows the deliberation as stored at that moment: the stopped calls
    // are stored by the worker as they abort, racing it, so its `calls` are left out (the view
    // read after the end has them).
    const { calls: _racing, ...cancelBody } = cancelled.body ?? {};
    return {
      request: body,
      ...accepted,
      cancel: { status: cancelled.status, body: this.clean(cancelBody), callsOmitted: true },
      delivered: deliveredEvents(delivered.map((e) => this.clean(e) as DeliveredEvent)),
      sse: await this.sse(accepted.messageId, delivered),
      view: await this.view(accepted.messageId),
      rows: await this.rows(accepted.conversationId),
    };
  }

  /** A batch: submitted, waited for until it has no queued or running item, each item recorded. */
  async batch(body: Record<string, unknown>) {
    const submitted = await this.stack.api<{ batchId: string }>('POST', '/api/batches', { body });
    if (submitted.status !== 202) return { request: body, submitted: this.clean(submitted) };
    const { batchId } = submitted.body;
    const view = await until('the batch to finish', async () => {
      const response = await this.stack.api<{ status: string; queued: number; running: number }>(
        'GET',
        `/api/batches/${batchId}`,
      );
      const b = response.body;
      return b && b.queued === 0 && b.running === 0 && !['queued', 'running'].includes(b.status)
        ? response
        : null;
    });
    const items = (await this.stack.db.query(
      'SELECT id, conversation_id FROM messages WHERE batch_id = $1 AND role = $2 ORDER BY batch_index',
      [batchId, 'assistant'],
    )) as { id: string; conversation_id: string }[];
    const recorded = [];
    for (const item of items) {
      const delivered = await this.stack.follow(item.id, { timeoutMs: 60_000 });
      recorded.push({
        messageId: item.id,
        delivered: deliveredEvents(delivered.map((e) => this.clean(e) as DeliveredEvent)),
        sse: await this.sse(item.id, delivered),
        view: await this.view(item.id),
        rows: await this.rows(item.conversation_id),
      });
    }
    const jsonl = await fetch(`${this.stack.baseUrl}/api/batches/${batchId}/results?format=jsonl`);
    const csv = await fetch(`${this.stack.baseUrl}/api/batches/${batchId}/results?format=csv`);
    const [batchRow] = (await this.stack.db.query('SELECT * FROM batches WHERE id = $1', [batchId])) as Row[];
    return {
      request: body,
      submitted: { status: submitted.status, body: submitted.body },
      view: { status: view.status, body: this.clean(view.body) },
      batchRow: this.clean(batchRow),
      items: recorded,
      results: {
        jsonl: this.clean(
          (await jsonl.text())
            .trim()
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as unknown),
        ),
        csv: this.clean(await csv.text()),
      },
    };
  }
}

export interface Recording {
  format: 'conclave-replay/1';
  env: Record<string, string>;
  scenarios: { name: string; record: unknown }[];
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const onlyAt = args.indexOf('--only');
  const only = onlyAt >= 0 ? args.splice(onlyAt, 2)[1] : null;
  const out = args[0];
  if (!out) {
    console.error('usage: record.ts OUT.json [--only <substring>]');
    process.exit(2);
  }
  const stack = new TestStack(REPLAY_ENV);
  const started = Date.now();
  await stack.start();
  const recorder = new Recorder(stack);
  const recording: Recording = { format: 'conclave-replay/1', env: REPLAY_ENV, scenarios: [] };
  try {
    await stack.db.query(PIN_IDS);
    for (const [index, scenario] of SCENARIOS.entries()) {
      if (only && !scenario.name.includes(only)) continue;
      const t0 = Date.now();
      await recorder.pinIds(index);
      const record = withOrdinals(await recorder.run(scenario));
      recording.scenarios.push({ name: scenario.name, record });
      console.log(`${String(Date.now() - t0).padStart(6)} ms  ${scenario.name}`);
    }
  } finally {
    await stack.stop();
  }
  writeFileSync(out, `${JSON.stringify(recording, null, 1)}\n`);
  console.log(
    `${recording.scenarios.length} scenarios in ${((Date.now() - started) / 1000).toFixed(1)} s -> ${out}`,
  );
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
