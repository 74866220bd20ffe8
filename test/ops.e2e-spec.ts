import { checkReadiness } from '@conclave/platform';
import IORedis from 'ioredis';
import { TestStack } from './support/harness';

/** The value of the series `name` whose labels include `labels` (in any order); undefined when absent. */
function sample(exposition: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of exposition.split('\n')) {
    const match = /^([a-z_]+)\{(.*)\} (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...match[2].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

/** Prometheus's bearer token for /metrics. */
const METRICS_TOKEN = 'prom-scrape-0123456789abcdef';

describe('operations: probes, metrics, admin dashboard', () => {
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    SIM_LATENCY_MS: '5',
    METRICS_TOKEN,
    // Models named in the configuration are the only ones with a `model` label of their own.
    DEFAULT_COUNCIL_MODELS: 'sim/a,sim/b',
    DEFAULT_CHAIRMAN_MODEL: 'sim/c',
    DEFAULT_VOTE_MODELS: 'sim/flaky:transient@answer,sim/broken:fail@answer,sim/c',
  });
  let workerPort: number;
  let userKey: string;
  let adminKey: string;

  beforeAll(async () => {
    await stack.start({ worker: false });
    workerPort = (await stack.startWorker()).httpPort;
    userKey = await stack.createUser('someone');
    adminKey = await stack.createUser('operator', 'admin');
  }, 60_000);
  afterAll(() => stack.stop());

  const workerGet = (path: string) => fetch(`http://127.0.0.1:${workerPort}${path}`);
  const scrape = (base: string) =>
    fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });

  it('answers liveness and readiness on the gateway and the worker, without a key', async () => {
    for (const base of [stack.baseUrl, `http://127.0.0.1:${workerPort}`]) {
      const live = await fetch(`${base}/health/live`);
      expect([live.status, await live.json()]).toEqual([200, { status: 'ok' }]);
      const ready = await fetch(`${base}/health/ready`);
      expect([ready.status, await ready.json()]).toEqual([
        200,
        { status: 'ok', postgres: 'up', redis: 'up' },
      ]);
    }
    expect((await workerGet('/api/deliberations')).status).toBe(404);
  });

  it('is not ready, and says which store is missing, when Redis does not answer', async () => {
    const unreachable = new IORedis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    unreachable.on('error', () => undefined);
    expect(await checkReadiness(stack.db, unreachable, 500)).toEqual({
      ready: false,
      checks: { postgres: 'up', redis: 'down' },
    });
    unreachable.disconnect();
  });

  it('exports Prometheus metrics: queue depth, active deliberations and sockets on the gateway, stages and calls on the worker', async () => {
    const accepted = await stack.deliberate(
      { question: 'Metrics?', councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' },
      userKey,
    );
    await stack.follow(accepted.messageId, { socket: await stack.connect(userKey) });

    const gateway = await (await scrape(stack.baseUrl)).text();
    const queue = { queue: 'deliberation-stages', process: 'gateway' };
    expect(sample(gateway, 'conclave_queue_jobs', { ...queue, state: 'waiting' })).toBe(0);
    expect(sample(gateway, 'conclave_queue_jobs', { ...queue, state: 'completed' })).toBeGreaterThanOrEqual(
      3,
    );
    expect(sample(gateway, 'conclave_active_deliberations', { status: 'running' })).toBe(0);
    expect(sample(gateway, 'conclave_connected_sockets', {})).toBeGreaterThanOrEqual(1);

    const worker = await (await scrape(`http://127.0.0.1:${workerPort}`)).text();
    const stage1 = { mode: 'council', stage: 'stage1', outcome: 'ok', process: 'worker' };
    expect(sample(worker, 'conclave_stage_duration_seconds_count', stage1)).toBe(1);
    const callA = { provider: 'simulated', model: 'sim/a', outcome: 'ok' };
    expect(sample(worker, 'conclave_model_call_duration_seconds_count', callA)).toBe(2); // answer and ranking
    const tokens = { provider: 'simulated', model: 'sim/c', direction: 'completion' };
    expect(sample(worker, 'conclave_tokens_total', tokens)).toBeGreaterThan(0);
  });

  it('counts retries and errors by provider and model', async () => {
    const accepted = await stack.deliberate(
      {
        question: 'Faults?',
        councilModels: ['sim/flaky:transient@answer', 'sim/broken:fail@answer'],
        chairmanModel: 'sim/c',
      },
      userKey,
    );
    await stack.follow(accepted.messageId, { socket: await stack.connect(userKey) });
    const worker = await (await scrape(`http://127.0.0.1:${workerPort}`)).text();
    expect(worker).toMatch(
      /conclave_model_call_retries_total\{provider="simulated",model="sim\/flaky:transient@answer",process="worker"\} 1/,
    );
    expect(worker).toMatch(
      /conclave_model_call_errors_total\{provider="simulated",model="sim\/broken:fail@answer",kind="http",process="worker"\} 1/,
    );
  });

  it('labels models the configuration does not name, and unknown providers, as "other"', async () => {
    const accepted = await stack.deliberate(
      {
        question: 'Whose models show?',
        councilModels: ['sim/private-model-of-alice', 'sim/private-model-of-bob:fail@answer'],
        chairmanModel: 'sim/c',
      },
      userKey,
    );
    await stack.follow(accepted.messageId, { socket: await stack.connect(userKey) });
    const worker = await (await scrape(`http://127.0.0.1:${workerPort}`)).text();
    expect(worker).not.toContain('private-model');
    expect(
      sample(worker, 'conclave_model_call_errors_total', { model: 'other', kind: 'http' }),
    ).toBeGreaterThanOrEqual(1);
    const providers = new Set([...worker.matchAll(/provider="([^"]*)"/g)].map((m) => m[1]));
    for (const provider of providers)
      expect(['simulated', 'openrouter', 'openai-compatible', 'other']).toContain(provider);
  });

  it('serves /metrics only with METRICS_TOKEN as a bearer token, on the gateway and the worker', async () => {
    for (const base of [stack.baseUrl, `http://127.0.0.1:${workerPort}`]) {
      for (const authorization of [
        undefined,
        `Bearer ${METRICS_TOKEN}x`,
        `Bearer ${userKey}`,
        METRICS_TOKEN,
      ]) {
        const refused = await fetch(`${base}/metrics`, { headers: authorization ? { authorization } : {} });
        expect({ base, authorization, status: refused.status }).toEqual({ base, authorization, status: 401 });
        expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
        expect(await refused.text()).not.toContain('conclave_');
      }
      const allowed = await scrape(base);
      expect(allowed.status).toBe(200);
      expect(await allowed.text()).toContain('conclave_');
      // The probes stay open: Kubernetes calls them without a token.
      expect((await fetch(`${base}/health/live`)).status).toBe(200);
    }
  });

  it('shows Bull Board at /admin/queues to admin keys only', async () => {
    expect((await fetch(`${stack.baseUrl}/admin/queues`)).status).toBe(401);
    const asUser = await fetch(`${stack.baseUrl}/admin/queues`, {
      headers: { authorization: `Bearer ${userKey}` },
    });
    expect(asUser.status).toBe(403);
    const asAdmin = await fetch(`${stack.baseUrl}/admin/queues`, {
      headers: { authorization: `Bearer ${adminKey}` },
    });
    expect(asAdmin.status).toBe(200);
    expect(await asAdmin.text()).toMatch(/<html/i);
    const queues = await fetch(`${stack.baseUrl}/admin/queues/api/queues`, {
      headers: { authorization: `Bearer ${adminKey}` },
    });
    expect(queues.status).toBe(200);
    const body = (await queues.json()) as { queues: { name: string; readOnlyMode: boolean }[] };
    // The stage queue, and the retention job's own queue to look at (not to act on).
    expect(body.queues.map((q) => [q.name, q.readOnlyMode])).toEqual([
      ['deliberation-stages', false],
      ['data-lifecycle', true],
    ]);
    expect(
      (
        await fetch(`${stack.baseUrl}/admin/queues/api/queues`, {
          headers: { authorization: `Bearer ${userKey}` },
        })
      ).status,
    ).toBe(403);
  });

  it('lets a browser in by the sign-in form, with a session cookie scoped to /admin; never by ?access_token=', async () => {
    const byUrl = await fetch(`${stack.baseUrl}/admin/queues?access_token=${adminKey}`, {
      redirect: 'manual',
    });
    expect(byUrl.status).toBe(400);
    expect(byUrl.headers.get('set-cookie')).toBeNull();
    const entry = await fetch(`${stack.baseUrl}/admin/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `key=${encodeURIComponent(adminKey)}`,
    });
    expect(entry.status).toBe(303);
    const cookie = entry.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(
      /conclave_admin_session=cas_[^;]+; Path=\/admin; Expires=[^;]+; HttpOnly; SameSite=Strict/,
    );
    expect(cookie).not.toContain(adminKey);
    const page = await fetch(`${stack.baseUrl}/admin/queues`, { headers: { cookie: cookie.split(';')[0] } });
    expect(page.status).toBe(200);
    const refused = await fetch(`${stack.baseUrl}/admin/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `key=${encodeURIComponent(userKey)}`,
    });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('set-cookie')).toBeNull();
  });

  it('refuses to start with a malformed setting, naming the variable', async () => {
    await expect(stack.spawnWorker({ WORKER_CONCURRENCY: 'many' })).rejects.toThrow(
      // the start-up error is a JSON log line: its quotes arrive escaped
      /exited \(1\)[\s\S]*"level":"fatal"[\s\S]*WORKER_CONCURRENCY must be an integer >= 1, got \\"many\\"/,
    );
    await expect(stack.spawnGateway({ PROVIDER_LIMITS: '{"openrouter":{"rpm":0}}' })).rejects.toThrow(
      /exited \(1\)[\s\S]*PROVIDER_LIMITS/,
    );
    await expect(stack.spawnWorker({ METRICS_TOKEN: 'too short' })).rejects.toThrow(
      /exited \(1\)[\s\S]*METRICS_TOKEN must be/,
    );
    await expect(stack.spawnGateway({ CORS_ORIGINS: 'app.example.com' })).rejects.toThrow(
      /CORS_ORIGINS: \\"app.example.com\\" is not an origin/,
    );
  }, 60_000);
});
