/**
 * A bounded chaos run: mixed deliberations and batches for a few minutes while workers are killed
 * and restarted and the (simulated) provider fails at random; then it counts what became of every
 * accepted request. Exits 1 when anything was lost or duplicated, or failed without a clear error
 * (empty, or a stack trace).
 *
 *   npm run chaos                      # 3 minutes
 *   npm run chaos -- --seconds 60      # shorter
 *
 * It uses the local PostgreSQL and Redis with its own database and key prefix, and removes both.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { TestStack } from '../test/support/harness';

const args = process.argv.slice(2);
const seconds = Number(args[args.indexOf('--seconds') + 1]) || 180;
const WORKERS = 3;
const rand = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)];

/** Simulated models that fail now and then: retried 503s, hard failures, slow answers. */
function flakyModel(name: string): string {
  const roll = Math.random();
  if (roll < 0.15) return `sim/${name}:transient`;
  if (roll < 0.22) return `sim/${name}:fail`;
  if (roll < 0.4) return `sim/${name}:delay1500`;
  return `sim/${name}`;
}

function randomRequest(): Record<string, unknown> {
  const panel = (n: number) => Array.from({ length: n }, (_, i) => flakyModel(`m${i}`));
  const question = `Chaos question ${randomUUID().slice(0, 8)}: how many?`;
  switch (rand(['council', 'vote', 'jury', 'debate', 'delphi'] as const)) {
    case 'council':
      return { question, councilModels: panel(3), chairmanModel: 'sim/chair' };
    case 'vote':
      return { question, mode: 'vote', modeConfig: { models: panel(3) } };
    case 'jury':
      return {
        question,
        mode: 'jury',
        modeConfig: {
          content: 'Some content to judge.',
          jurorModels: panel(3),
          foremanModel: 'sim/f',
        },
      };
    case 'debate':
      return { question, mode: 'debate', modeConfig: { models: panel(3) } };
    case 'delphi':
      return {
        question,
        mode: 'delphi',
        modeConfig: { panelistModels: panel(3), facilitatorModel: 'sim/f', maxRounds: 3 },
      };
  }
}

async function main(): Promise<void> {
  const stack = new TestStack({
    SIM_LATENCY_MS: '300',
    WORKER_CONCURRENCY: '16',
    WORKER_LOCK_MS: '5000',
    WORKER_STALLED_INTERVAL_MS: '2000',
    WORKER_SHUTDOWN_TIMEOUT_MS: '3000',
    RECONCILE_INTERVAL_MS: '3000',
    RECONCILE_IDLE_MS: '10000',
    RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
    RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
    MAX_ACTIVE_BATCHES_PER_USER: '1000',
  });
  await stack.start({ worker: false });
  const workers: ChildProcess[] = await Promise.all(
    Array.from({ length: WORKERS }, () => stack.spawnWorker()),
  );
  const accepted = new Map<string, string>(); // idempotency key -> messageId
  const batches: string[] = [];
  let refused = 0;
  const refusals = new Set<string>();
  let killed = 0;
  let stopped = 0;

  /** Submits with an Idempotency-Key and retries on network errors, as a careful client would. */
  const submit = async (path: string, body: unknown): Promise<string | null> => {
    const key = randomUUID();
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const response = await stack.api<{ messageId?: string; batchId?: string }>('POST', path, {
          body,
          headers: { 'idempotency-key': key },
        });
        if (response.status !== 202) {
          refused++;
          const reason = `${response.status} ${JSON.stringify(response.body).slice(0, 300)}`;
          if (refusals.size < 5) refusals.add(reason);
          return null;
        }
        const id = response.body.messageId ?? response.body.batchId ?? '';
        accepted.set(key, id);
        return id;
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    return null;
  };

  console.log(`chaos for ${seconds} s: ${WORKERS} workers, one gateway, a flaky simulated provider`);
  const until = Date.now() + seconds * 1000;
  let nextKill = Date.now() + 8000;
  const pending: Promise<unknown>[] = [];
  while (Date.now() < until) {
    if (Math.random() < 0.05) {
      const items = Array.from({ length: 10 }, () => {
        const request = randomRequest();
        delete request.conversationId;
        return request;
      });
      pending.push(
        submit('/api/batches', { items, concurrency: 4, generateTitles: false }).then(
          (id) => id && batches.push(id),
        ),
      );
    } else {
      pending.push(submit('/api/deliberations', randomRequest()));
    }
    if (Date.now() > nextKill) {
      nextKill = Date.now() + 5000 + Math.random() * 10_000;
      const alive = workers.filter((w) => w.exitCode === null && w.signalCode === null);
      const victim = rand(alive);
      if (Math.random() < 0.6) {
        victim.kill('SIGKILL');
        killed++;
      } else {
        victim.kill('SIGTERM');
        stopped++;
      }
      workers.push(await stack.spawnWorker());
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await Promise.all(pending);

  // Settle: every accepted deliberation must end, complete or failed with a clear error.
  const settleBy = Date.now() + 180_000;
  const open = async () =>
    (
      await stack.db.query(
        `SELECT count(*)::int AS n FROM messages WHERE role = 'assistant' AND status IN ('queued', 'running')`,
      )
    )[0].n as number;
  while ((await open()) > 0 && Date.now() < settleBy) await new Promise((r) => setTimeout(r, 1000));

  const ids = [...accepted.values()];
  const [counts] = await stack.db.query(
    `SELECT
       count(*) FILTER (WHERE status = 'complete')::int AS complete,
       count(*) FILTER (WHERE status = 'failed' AND error IS NOT NULL AND error <> '' AND error !~ '\\.(ts|js):[0-9]+')::int AS failed_clearly,
       count(*) FILTER (WHERE status = 'failed' AND (error IS NULL OR error = '' OR error ~ '\\.(ts|js):[0-9]+'))::int AS failed_unclearly,
       count(*) FILTER (WHERE status IN ('queued', 'running'))::int AS stuck
     FROM messages WHERE role = 'assistant' AND (id = ANY($1::uuid[]) OR batch_id = ANY($1::uuid[]))`,
    [ids],
  );
  const [{ found }] = await stack.db.query(
    `SELECT count(*)::int AS found FROM (SELECT id FROM messages WHERE id = ANY($1::uuid[])
       UNION ALL SELECT id FROM batches WHERE id = ANY($1::uuid[])) t`,
    [ids],
  );
  const [{ dup_rows }] = await stack.db.query(
    `SELECT count(*)::int AS dup_rows FROM (SELECT 1 FROM deliberation_stages
       GROUP BY message_id, stage_type, model, participant HAVING count(*) > 1) d`,
  );
  const [{ dup_seq }] = await stack.db.query(
    `SELECT count(*)::int AS dup_seq FROM (SELECT 1 FROM deliberation_events GROUP BY message_id, seq HAVING count(*) > 1) d`,
  );
  const [{ batch_items }] = await stack.db.query(
    `SELECT count(*)::int AS batch_items FROM messages WHERE role = 'assistant' AND batch_id = ANY($1::uuid[])`,
    [batches],
  );
  const submitted = accepted.size - batches.length + batch_items;
  const lost = accepted.size - found + counts.stuck;
  const duplicated = dup_rows + dup_seq;
  console.log(
    [
      `workers killed: ${killed}, stopped: ${stopped}; requests refused (4xx): ${refused}`,
      `submitted:                 ${submitted} (${accepted.size - batches.length} deliberations, ${batches.length} batches with ${batch_items} items)`,
      `completed:                 ${counts.complete}`,
      `failed with a clear error: ${counts.failed_clearly}`,
      `failed without one:        ${counts.failed_unclearly}`,
      `lost:                      ${lost}`,
      `duplicated:                ${duplicated}`,
    ].join('\n'),
  );
  if (refusals.size > 0) console.log(`refusals, for example:\n  ${[...refusals].join('\n  ')}`);
  const unclear: { error: string | null }[] = await stack.db.query(
    `SELECT error FROM messages WHERE role = 'assistant' AND status = 'failed' AND (error IS NULL OR error = '' OR error ~ '\\.(ts|js):[0-9]+') LIMIT 3`,
  );
  if (unclear.length > 0)
    console.log(`failures without a clear error:\n  ${unclear.map((u) => u.error).join('\n  ')}`);
  await stack.stop();
  process.exit(lost > 0 || duplicated > 0 || counts.failed_unclearly > 0 ? 1 : 0);
}

main().catch((error: unknown) => {
  console.error(`chaos run failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
