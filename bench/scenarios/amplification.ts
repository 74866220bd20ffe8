import { Agent, request as httpRequest } from 'node:http';
import { cpus } from 'node:os';
import { juryItems, JURY_DEFAULTS } from '../lib/batch';
import { ProcSampler, rssMb, type CpuReport } from '../lib/proc';
import { BenchStack } from '../lib/stack';
import { round, sleep, summary } from '../lib/stats';
import { HarnessError, type Scenario } from '../lib/types';
import { cloneBatch } from './report';

/** The product's default request limit: the flood runs against it, as a deployment's would. */
const REQUESTS_PER_MINUTE = 600;
/** JSON-RPC messages per MCP batch: the most /mcp takes in one (MAX_BATCH_MESSAGES). */
const MCP_BATCH = 10;

interface Answer {
  status: number;
  ms: number;
  text: string;
  retryAfter: string | null;
}

/**
 * One request with a key, on its own keep-alive pool: the attacker's requests and the probing
 * user's never queue behind each other in this process.
 */
function send(
  agent: Agent,
  baseUrl: string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      new URL(`${baseUrl}${path}`),
      {
        method,
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          ...(payload
            ? { 'content-type': 'application/json', 'content-length': String(payload.length) }
            : {}),
          ...headers,
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const retryAfter = response.headers['retry-after'];
          resolve({
            status: response.statusCode ?? 0,
            ms: performance.now() - started,
            text: Buffer.concat(chunks).toString('utf8'),
            retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
          });
        });
        response.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** Why a refusal was given, from its message. */
function reason(answer: Answer): string {
  if (/REPORT_QUEUE_PER_USER/.test(answer.text)) return 'REPORT_QUEUE_PER_USER';
  if (/REPORT_QUEUE_TOTAL/.test(answer.text)) return 'REPORT_QUEUE_TOTAL';
  if (/too many requests/i.test(answer.text)) return 'RATE_LIMIT_REQUESTS_PER_MINUTE';
  return 'other';
}

/** JSON-RPC results in an MCP answer (JSON, or the data lines of an event stream). */
function mcpResults(text: string): { results: number; errors: number } {
  const messages: unknown[] = [];
  const parse = (json: string) => {
    try {
      const value: unknown = JSON.parse(json);
      messages.push(...(Array.isArray(value) ? value : [value]));
    } catch {
      // not JSON
    }
  };
  if (text.trimStart().startsWith('[') || text.trimStart().startsWith('{')) parse(text);
  else for (const line of text.split('\n')) if (line.startsWith('data:')) parse(line.slice(5));
  let results = 0;
  let errors = 0;
  for (const m of messages) {
    if (typeof m === 'object' && m !== null && 'result' in m) results += 1;
    else errors += 1;
  }
  return { results, errors };
}

/** What the attacker's requests of one kind got back. */
interface Tally {
  requests: number;
  ok: number;
  refused: Record<string, number>;
  /** 429 and 503 answers with a Retry-After header. */
  refusedWithRetryAfter: number;
  refusedWithoutRetryAfter: number;
  other: Record<string, number>;
  /** MCP only: JSON-RPC calls answered with a result. */
  callsAnswered?: number;
  callsSent?: number;
}

const tally = (): Tally => ({
  requests: 0,
  ok: 0,
  refused: {},
  refusedWithRetryAfter: 0,
  refusedWithoutRetryAfter: 0,
  other: {},
});

function count(t: Tally, answer: Answer): void {
  t.requests += 1;
  if (answer.status === 200) t.ok += 1;
  else if (answer.status === 429 || answer.status === 503) {
    const key = `${answer.status} ${reason(answer)}`;
    t.refused[key] = (t.refused[key] ?? 0) + 1;
    if (answer.retryAfter !== null && Number(answer.retryAfter) > 0) t.refusedWithRetryAfter += 1;
    else t.refusedWithoutRetryAfter += 1;
  } else t.other[String(answer.status)] = (t.other[String(answer.status)] ?? 0) + 1;
}

interface Probes {
  conversations: number[];
  report: number[];
  failed: number;
  /** Status and message of each failed request (its first 200 characters). */
  failures: string[];
}

/** The second user's ordinary requests, one after another, until `until`. */
async function probe(baseUrl: string, token: string, batchId: string, until: number): Promise<Probes> {
  const agent = new Agent({ keepAlive: true, maxSockets: 2, timeout: 2_000 });
  const probes: Probes = { conversations: [], report: [], failed: 0, failures: [] };
  const fail = (answer: Answer) => {
    probes.failed += 1;
    probes.failures.push(`${answer.status} ${answer.text.slice(0, 200)}`);
  };
  try {
    while (Date.now() < until) {
      const list = await send(agent, baseUrl, 'GET', '/api/conversations', token);
      if (list.status === 200) probes.conversations.push(list.ms);
      else fail(list);
      const report = await send(agent, baseUrl, 'GET', `/api/batches/${batchId}/report`, token);
      if (report.status === 200) probes.report.push(report.ms);
      else fail(report);
      // ~4 requests a second: well inside the user's own REQUESTS_PER_MINUTE over every phase.
      await sleep(400);
    }
  } finally {
    agent.destroy();
  }
  return probes;
}

/** The gateway's RSS every 50 ms until stopped: the highest sample. */
function rssWatch(pid: number): () => number {
  let peak = rssMb(pid) ?? 0;
  const timer = setInterval(() => {
    const mb = rssMb(pid);
    if (mb !== null && mb > peak) peak = mb;
  }, 50);
  return () => {
    clearInterval(timer);
    return peak;
  };
}

interface Flood {
  mcp: Tally;
  reports: Tally;
}

/**
 * The attacker: `mcpLanes` loops each POSTing JSON-RPC batches of MCP_BATCH `resources/list` calls,
 * and `reportLanes` loops each asking a report or comparison of its large batches, none waiting
 * for Retry-After, until `until`.
 */
async function flood(
  baseUrl: string,
  token: string,
  batchIds: string[],
  lanes: { mcp: number; reports: number },
  until: number,
): Promise<Flood> {
  const agent = new Agent({ keepAlive: true, maxSockets: lanes.mcp + lanes.reports, timeout: 2_000 });
  const result: Flood = { mcp: { ...tally(), callsAnswered: 0, callsSent: 0 }, reports: tally() };
  const rpc = Array.from({ length: MCP_BATCH }, (_, id) => ({
    jsonrpc: '2.0',
    id,
    method: 'resources/list',
  }));
  const asks: string[] = [];
  for (const [i, a] of batchIds.entries()) {
    asks.push(`/api/batches/${a}/report`);
    for (const b of batchIds.slice(i + 1)) asks.push(`/api/batches/compare?a=${a}&b=${b}`);
  }
  let next = 0;
  const mcpLane = async () => {
    while (Date.now() < until) {
      const answer = await send(agent, baseUrl, 'POST', '/mcp', token, rpc, {
        accept: 'application/json, text/event-stream',
      });
      count(result.mcp, answer);
      result.mcp.callsSent = (result.mcp.callsSent ?? 0) + MCP_BATCH;
      if (answer.status === 200) {
        result.mcp.callsAnswered = (result.mcp.callsAnswered ?? 0) + mcpResults(answer.text).results;
      }
    }
  };
  const reportLane = async () => {
    while (Date.now() < until) {
      const path = asks[next++ % asks.length];
      count(result.reports, await send(agent, baseUrl, 'GET', path, token));
    }
  };
  try {
    await Promise.all([
      ...Array.from({ length: lanes.mcp }, mcpLane),
      ...Array.from({ length: lanes.reports }, reportLane),
    ]);
  } finally {
    agent.destroy();
  }
  return result;
}

async function submitJury(baseUrl: string, token: string, items: number, name: string): Promise<string> {
  const agent = new Agent({ keepAlive: false });
  const answer = await send(agent, baseUrl, 'POST', '/api/batches', token, {
    name,
    defaults: JURY_DEFAULTS,
    items: juryItems(items, name),
    concurrency: 32,
    generateTitles: false,
  });
  if (answer.status !== 202)
    throw new HarnessError(`POST /api/batches: ${answer.status} ${answer.text.slice(0, 300)}`);
  return (JSON.parse(answer.text) as { batchId: string }).batchId;
}

async function waitFinished(
  baseUrl: string,
  token: string,
  batchId: string,
  timeoutMs: number,
): Promise<void> {
  const agent = new Agent({ keepAlive: false });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const view = await send(agent, baseUrl, 'GET', `/api/batches/${batchId}`, token);
    if (view.status === 200 && (JSON.parse(view.text) as { finishedAt: string | null }).finishedAt) return;
    if (Date.now() > deadline)
      throw new HarnessError(`batch ${batchId} not finished after ${timeoutMs / 1000} s`);
    await sleep(250);
  }
}

export const amplification: Scenario = {
  name: 'amplification',
  title: 'One user floods with MCP batches and reports: another user’s latency',
  target:
    'figures only (issue 33): a second user’s p50/p90/max during the flood against a baseline, the flood’s refusals and the gateway’s memory',
  async run(ctx) {
    const items = ctx.quick ? 300 : 2000;
    const batches = ctx.quick ? 3 : 4;
    const templates = ctx.quick ? 30 : 100;
    const baselineS = ctx.quick ? 3 : 15;
    const floodS = ctx.quick ? 5 : 30;
    const lanes = { mcp: ctx.quick ? 4 : 8, reports: ctx.quick ? 10 : 30 };
    const stack = await new BenchStack(ctx, {
      AUTH_MODE: 'apikey',
      SIM_LATENCY_MS: '0',
      WORKER_CONCURRENCY: '32',
      RATE_LIMIT_REQUESTS_PER_MINUTE: String(REQUESTS_PER_MINUTE),
    }).init();
    const cpu: Record<string, CpuReport> = {};
    const peakRss: Record<string, Record<string, number>> = {};
    try {
      const gateway = await stack.spawnGateway();
      const worker = await stack.spawnWorker();
      const pid = gateway.child.pid ?? 0;
      const attacker = await stack.test.createUser('bench-attacker');
      const victim = await stack.test.createUser('bench-victim');

      // The attacker's large finished batches (a real jury batch, copied with SQL) and the victim's small one.
      const [template, small] = await Promise.all([
        submitJury(stack.baseUrl, attacker, templates, 'amplification template'),
        submitJury(stack.baseUrl, victim, 3, 'amplification small'),
      ]);
      await Promise.all([
        waitFinished(stack.baseUrl, attacker, template, 300_000),
        waitFinished(stack.baseUrl, victim, small, 300_000),
      ]);
      await stack.stopWorker(worker);
      const large: string[] = [];
      for (let i = 0; i < batches; i++) {
        large.push((await cloneBatch(stack.db, template, items, `amplification ${items} #${i}`)).batchId);
      }
      await stack.db.query('ANALYZE');
      ctx.log(
        `  amplification: ${batches} × ${items}-item batches of the attacker, a 3-item batch of the victim`,
      );

      const phases: Record<string, { probes: Probes; rss: { before: number; peak: number; after: number } }> =
        {};
      let attack: Flood | null = null;
      for (const phase of ['baseline', 'flood'] as const) {
        const seconds = phase === 'baseline' ? baselineS : floodS;
        const before = round(rssMb(pid) ?? Number.NaN, 0);
        const stopWatch = rssWatch(pid);
        const from = ctx.sampler.cpu();
        ctx.sampler.resetPeaks();
        const until = Date.now() + seconds * 1000;
        const [probes, flooded] = await Promise.all([
          probe(stack.baseUrl, victim, small, until),
          phase === 'flood' ? flood(stack.baseUrl, attacker, large, lanes, until) : Promise.resolve(null),
        ]);
        if (flooded) attack = flooded;
        cpu[phase] = ProcSampler.report(from, ctx.sampler.cpu(), cpus().length);
        peakRss[phase] = ctx.sampler.peakRss();
        const peak = round(stopWatch(), 0);
        phases[phase] = { probes, rss: { before, peak, after: round(rssMb(pid) ?? Number.NaN, 0) } };
        ctx.log(
          `  ${phase}: victim conversations p50 ${round(summary(probes.conversations).p50)} ms, report p50 ${round(summary(probes.report).p50)} ms; gateway RSS ${before} → ${peak} MB`,
        );
      }
      if (!attack) throw new HarnessError('no flood ran');
      const { baseline, flood: flooded } = phases;
      if (baseline.probes.failed > 0) {
        throw new HarnessError(
          `the victim's requests failed ${baseline.probes.failed} times without a flood: ${baseline.probes.failures.slice(0, 3).join(' | ')}`,
        );
      }
      const p90 = (values: number[]) => {
        const sorted = [...values].sort((a, b) => a - b);
        return round(
          sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(0.9 * sorted.length) - 1))] ?? NaN,
        );
      };
      const stat = (values: number[]) => {
        const s = summary(values);
        return { n: s.n, p50: s.p50, p90: p90(values), max: s.max };
      };
      const latency = {
        conversations: {
          baseline: stat(baseline.probes.conversations),
          flood: stat(flooded.probes.conversations),
        },
        report: { baseline: stat(baseline.probes.report), flood: stat(flooded.probes.report) },
      };
      const refusedOf = (t: Tally) => Object.values(t.refused).reduce((a, b) => a + b, 0);
      const describe = (t: Tally) =>
        Object.entries(t.refused)
          .map(([k, v]) => `${v} × ${k}`)
          .join(', ') || 'none';
      const rows = (label: string, key: 'conversations' | 'report') => [
        [
          label,
          'baseline',
          latency[key].baseline.n,
          latency[key].baseline.p50,
          latency[key].baseline.p90,
          latency[key].baseline.max,
        ],
        [
          '',
          '**during the flood**',
          latency[key].flood.n,
          `**${latency[key].flood.p50}**`,
          `**${latency[key].flood.p90}**`,
          `**${latency[key].flood.max}**`,
        ],
      ];
      const perS = (n: number) => round(n / floodS, 1);
      return {
        name: 'amplification',
        title: this.title,
        target: this.target,
        parameters: {
          users: 2,
          authMode: 'apikey',
          requestsPerMinute: REQUESTS_PER_MINUTE,
          reportSlots: stack.test.config.reports.slots,
          reportQueuePerUser: stack.test.config.reports.queuePerUser,
          reportQueueTotal: stack.test.config.reports.queueTotal,
          reportCacheMb: stack.test.config.reports.cacheBytes / 1024 / 1024,
          attackerBatches: `${batches} × ${items} jury items`,
          mcpBatch: `${MCP_BATCH} × resources/list per POST /mcp`,
          lanes,
          baselineS,
          floodS,
          gateways: 1,
        },
        figures: {
          victimMs: latency,
          attacker: attack,
          mcpCallsSent: attack.mcp.callsSent,
          mcpCallsAnswered: attack.mcp.callsAnswered,
          attackerRequestsPerS: perS(attack.mcp.requests + attack.reports.requests),
          refused: refusedOf(attack.mcp) + refusedOf(attack.reports),
          refusedWithoutRetryAfter:
            attack.mcp.refusedWithoutRetryAfter + attack.reports.refusedWithoutRetryAfter,
          victimFailuresDuringFlood: flooded.probes.failures.slice(0, 10),
          gatewayRssMb: { baseline: baseline.rss, flood: flooded.rss },
        },
        // No timing target (issue 33 asks for the figures); these two are counts, not times.
        checks: [
          {
            what: 'the attacker’s 429 and 503 answers with Retry-After',
            target: 'all',
            value: `${attack.mcp.refusedWithRetryAfter + attack.reports.refusedWithRetryAfter} of ${refusedOf(attack.mcp) + refusedOf(attack.reports)}`,
            met: attack.mcp.refusedWithoutRetryAfter + attack.reports.refusedWithoutRetryAfter === 0,
          },
          {
            what: 'the victim’s requests during the flood answered 200',
            target: 'all',
            value: `${flooded.probes.conversations.length + flooded.probes.report.length} of ${flooded.probes.conversations.length + flooded.probes.report.length + flooded.probes.failed}; p90 ${latency.conversations.flood.p90} / ${latency.report.flood.p90} ms (baseline ${latency.conversations.baseline.p90} / ${latency.report.baseline.p90} ms)`,
            met: flooded.probes.failed === 0,
          },
        ],
        tables: [
          {
            caption: 'The victim’s requests (ms), one after another with 400 ms pauses',
            table: {
              columns: ['request', 'phase', 'n', 'p50', 'p90', 'max'],
              rows: [
                ...rows('GET /api/conversations', 'conversations'),
                ...rows('GET its 3-item batch report', 'report'),
              ],
            },
          },
          {
            caption: `The attacker’s requests over ${floodS} s`,
            table: {
              columns: [
                'kind',
                'requests',
                'answered 200',
                'refused (429 / 503)',
                'with Retry-After',
                'other',
              ],
              rows: [
                [
                  `POST /mcp, ${MCP_BATCH} calls each`,
                  attack.mcp.requests,
                  `${attack.mcp.ok} (${attack.mcp.callsAnswered} of ${attack.mcp.callsSent} calls)`,
                  describe(attack.mcp),
                  `${attack.mcp.refusedWithRetryAfter} of ${refusedOf(attack.mcp)}`,
                  JSON.stringify(attack.mcp.other),
                ],
                [
                  `reports and comparisons of ${batches} × ${items} items`,
                  attack.reports.requests,
                  attack.reports.ok,
                  describe(attack.reports),
                  `${attack.reports.refusedWithRetryAfter} of ${refusedOf(attack.reports)}`,
                  JSON.stringify(attack.reports.other),
                ],
              ],
            },
          },
          {
            caption: 'Gateway RSS (MB)',
            table: {
              columns: ['phase', 'before', 'peak', 'after'],
              rows: [
                ['baseline', baseline.rss.before, baseline.rss.peak, baseline.rss.after],
                ['flood', flooded.rss.before, `**${flooded.rss.peak}**`, flooded.rss.after],
              ],
            },
          },
        ],
        method: [
          `One gateway process in API-key mode with the default limits (RATE_LIMIT_REQUESTS_PER_MINUTE ${REQUESTS_PER_MINUTE}, REPORT_SLOTS, REPORT_QUEUE_PER_USER, REPORT_QUEUE_TOTAL, REPORT_CACHE_MB at their defaults) and two users. The attacker owns ${batches} finished jury batches of ${items} items (a real ${templates}-item batch run by a worker, copied with SQL as in \`report\`); the victim owns a finished 3-item jury batch. No worker runs while measuring.`,
          `Baseline (${baselineS} s): the victim alone sends GET /api/conversations and GET /api/batches/<its batch>/report one after another, pausing 400 ms after each pair (about 4 requests a second, well within its own limit). Flood (${floodS} s): the same while the attacker runs ${lanes.mcp} loops POSTing JSON-RPC batches of ${MCP_BATCH} \`resources/list\` calls to /mcp and ${lanes.reports} loops asking every report and comparison of its batches in turn, none of them waiting for Retry-After.`,
          'Latency = the client’s time from sending a request to having read the whole answer (node:http, keep-alive, the victim and the attacker on separate connection pools). Nothing is asserted: the figures are reported.',
          'Gateway RSS is VmRSS of /proc/<pid>/status, sampled every 50 ms.',
        ],
        limits: [],
        notes: [
          `The attacker sent ${perS(attack.mcp.requests + attack.reports.requests)} requests/s; ${refusedOf(attack.mcp) + refusedOf(attack.reports)} were refused with 429/503 (${attack.mcp.refusedWithoutRetryAfter + attack.reports.refusedWithoutRetryAfter} of them without Retry-After). Of ${attack.mcp.callsSent} JSON-RPC calls, ${attack.mcp.callsAnswered} were answered: each call counts against the request limit.`,
        ],
        evidence: { cpu, peakRssMb: peakRss },
      };
    } finally {
      await stack.stop();
    }
  },
};
