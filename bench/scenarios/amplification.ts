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
/** The paced attacker's report and comparison asks a second: within REQUESTS_PER_MINUTE. */
const PACED_PER_SECOND = 8;
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
  /** Requests a second over all lanes (null: as fast as answers come). */
  perSecond: number | null = null,
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
  // Paced: the lanes take turns from one schedule, at most `perSecond` requests in any second.
  let nextAt = Date.now();
  const turn = async (): Promise<boolean> => {
    if (perSecond !== null) {
      const at = Math.max(nextAt, Date.now());
      nextAt = at + 1000 / perSecond;
      await sleep(at - Date.now());
    }
    return Date.now() < until;
  };
  const mcpLane = async () => {
    while (await turn()) {
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
    while (await turn()) {
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
    const settleS = ctx.quick ? 1 : 5;
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
      // Gateway 1 as deployed; gateway 2 keeps no reports (REPORT_CACHE_MB=0), so every ask computes.
      const gateways = [await stack.spawnGateway(), await stack.spawnGateway({ REPORT_CACHE_MB: '0' })];
      const worker = await stack.spawnWorker();
      const attacker = await stack.test.createUser('bench-attacker');
      const paced = await stack.test.createUser('bench-paced');
      const victim = await stack.test.createUser('bench-victim');

      // The attackers' large finished batches (a real jury batch each, copied with SQL) and the victim's small one.
      const [templateA, templateC, small] = await Promise.all([
        submitJury(stack.baseUrl, attacker, templates, 'amplification template'),
        submitJury(stack.baseUrl, paced, templates, 'amplification paced template'),
        submitJury(stack.baseUrl, victim, 3, 'amplification small'),
      ]);
      await Promise.all([
        waitFinished(stack.baseUrl, attacker, templateA, 300_000),
        waitFinished(stack.baseUrl, paced, templateC, 300_000),
        waitFinished(stack.baseUrl, victim, small, 300_000),
      ]);
      await stack.stopWorker(worker);
      const large: Record<'attacker' | 'paced', string[]> = { attacker: [], paced: [] };
      for (let i = 0; i < batches; i++) {
        for (const [who, template] of [
          ['attacker', templateA],
          ['paced', templateC],
        ] as const) {
          large[who].push((await cloneBatch(stack.db, template, items, `${who} ${items} #${i}`)).batchId);
        }
      }
      await stack.db.query('ANALYZE');
      ctx.log(
        `  amplification: ${batches} × ${items}-item batches for each of two users, a 3-item batch of the victim`,
      );

      interface Phase {
        key: string;
        label: string;
        gateway: 0 | 1;
        seconds: number;
        attack?: {
          token: string;
          batchIds: string[];
          lanes: { mcp: number; reports: number };
          perSecond: number | null;
        };
      }
      const plan: Phase[] = [
        { key: 'baseline', label: 'baseline', gateway: 0, seconds: baselineS },
        {
          key: 'flood',
          label: 'during the flood',
          gateway: 0,
          seconds: floodS,
          attack: { token: attacker, batchIds: large.attacker, lanes, perSecond: null },
        },
        { key: 'baselineNoCache', label: 'baseline', gateway: 1, seconds: baselineS },
        {
          key: 'pacedNoCache',
          label: 'during the paced reports',
          gateway: 1,
          seconds: floodS,
          attack: {
            token: paced,
            batchIds: large.paced,
            lanes: { mcp: 0, reports: lanes.reports },
            perSecond: PACED_PER_SECOND,
          },
        },
      ];
      type Rss = { before: number; peak: number; after: number; settled: number };
      const phases: Record<string, { probes: Probes; rss: Rss; attack: Flood | null }> = {};
      for (const phase of plan) {
        const { baseUrl, child } = gateways[phase.gateway];
        const pid = child.pid ?? 0;
        const before = round(rssMb(pid) ?? Number.NaN, 0);
        const stopWatch = rssWatch(pid);
        const from = ctx.sampler.cpu();
        ctx.sampler.resetPeaks();
        const until = Date.now() + phase.seconds * 1000;
        const { attack } = phase;
        const [probes, flooded] = await Promise.all([
          probe(baseUrl, victim, small, until),
          attack
            ? flood(baseUrl, attack.token, attack.batchIds, attack.lanes, until, attack.perSecond)
            : Promise.resolve(null),
        ]);
        cpu[phase.key] = ProcSampler.report(from, ctx.sampler.cpu(), cpus().length);
        peakRss[phase.key] = ctx.sampler.peakRss();
        const after = round(rssMb(pid) ?? Number.NaN, 0);
        await sleep(settleS * 1000);
        const rss = {
          before,
          peak: round(stopWatch(), 0),
          after,
          settled: round(rssMb(pid) ?? Number.NaN, 0),
        };
        phases[phase.key] = { probes, rss, attack: flooded };
        if (probes.failed > 0 && !attack) {
          throw new HarnessError(
            `the victim's requests failed ${probes.failed} times without a flood: ${probes.failures.slice(0, 3).join(' | ')}`,
          );
        }
        ctx.log(
          `  ${phase.key}: victim conversations p50 ${summary(probes.conversations).p50} ms, report p50 ${summary(probes.report).p50} ms; gateway RSS ${before} → ${rss.peak} MB`,
        );
      }
      const flood1 = phases.flood.attack;
      const paced1 = phases.pacedNoCache.attack;
      if (!flood1 || !paced1) throw new HarnessError('no flood ran');
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
      const latency = Object.fromEntries(
        plan.map((p) => [
          p.key,
          {
            conversations: stat(phases[p.key].probes.conversations),
            report: stat(phases[p.key].probes.report),
          },
        ]),
      );
      const refusedOf = (t: Tally) => Object.values(t.refused).reduce((a, b) => a + b, 0);
      const describe = (t: Tally) =>
        Object.entries(t.refused)
          .map(([k, v]) => `${v} × ${k}`)
          .join(', ') || 'none';
      const attacks = [flood1, paced1];
      const refused = attacks.reduce((n, a) => n + refusedOf(a.mcp) + refusedOf(a.reports), 0);
      const withRetryAfter = attacks.reduce(
        (n, a) => n + a.mcp.refusedWithRetryAfter + a.reports.refusedWithRetryAfter,
        0,
      );
      const victimFailed = plan.reduce((n, p) => n + phases[p.key].probes.failed, 0);
      const victimAnswered = plan.reduce(
        (n, p) => n + phases[p.key].probes.conversations.length + phases[p.key].probes.report.length,
        0,
      );
      const gatewayOf = (p: Phase) =>
        p.gateway === 0 ? 'gateway 1 (cache on)' : 'gateway 2 (REPORT_CACHE_MB=0)';
      const latencyRows = (key: 'conversations' | 'report') =>
        plan.map((p) => {
          const l = latency[p.key][key];
          const bold = (v: number) => (p.attack ? `**${v}**` : v);
          return [
            p.key === 'baseline'
              ? key === 'report'
                ? 'GET its 3-item batch report'
                : 'GET /api/conversations'
              : '',
            `${gatewayOf(p)}, ${p.label}`,
            l.n,
            bold(l.p50),
            bold(l.p90),
            bold(l.max),
          ];
        });
      const attackRow = (label: string, t: Tally, seconds: number, answered: string) => [
        label,
        `${t.requests} (${round(t.requests / seconds, 1)}/s)`,
        answered,
        describe(t),
        `${t.refusedWithRetryAfter} of ${refusedOf(t)}`,
        Object.keys(t.other).length > 0 ? JSON.stringify(t.other) : 'none',
      ];
      return {
        name: 'amplification',
        title: this.title,
        target: this.target,
        parameters: {
          users: 3,
          authMode: 'apikey',
          requestsPerMinute: REQUESTS_PER_MINUTE,
          reportSlots: stack.test.config.reports.slots,
          reportQueuePerUser: stack.test.config.reports.queuePerUser,
          reportQueueTotal: stack.test.config.reports.queueTotal,
          reportCacheMb: `${stack.test.config.reports.cacheBytes / 1024 / 1024} (gateway 2: 0)`,
          largeBatches: `${batches} × ${items} jury items per attacking user`,
          mcpBatch: `${MCP_BATCH} × resources/list per POST /mcp`,
          lanes,
          pacedPerSecond: PACED_PER_SECOND,
          baselineS,
          floodS,
          gateways: 2,
        },
        figures: {
          victimMs: latency,
          flood: flood1,
          paced: paced1,
          mcpCallsSent: flood1.mcp.callsSent,
          mcpCallsAnswered: flood1.mcp.callsAnswered,
          floodRequestsPerS: round((flood1.mcp.requests + flood1.reports.requests) / floodS, 1),
          refused,
          refusedWithRetryAfter: withRetryAfter,
          victimFailures: plan.flatMap((p) => phases[p.key].probes.failures).slice(0, 10),
          gatewayRssMb: Object.fromEntries(plan.map((p) => [p.key, phases[p.key].rss])),
        },
        // No timing target (issue 33 asks for the figures); these two are counts, not times.
        checks: [
          {
            what: 'the attackers’ 429 and 503 answers with Retry-After',
            target: 'all',
            value: `${withRetryAfter} of ${refused}`,
            met: withRetryAfter === refused,
          },
          {
            what: 'the victim’s requests answered 200',
            target: 'all',
            value: `${victimAnswered} of ${victimAnswered + victimFailed}; during the flood p90 ${latency.flood.conversations.p90} / ${latency.flood.report.p90} ms (baseline ${latency.baseline.conversations.p90} / ${latency.baseline.report.p90} ms)`,
            met: victimFailed === 0,
          },
        ],
        tables: [
          {
            caption:
              'The victim’s requests (ms), one after another with 400 ms pauses (the same gateway’s baseline first)',
            table: {
              columns: ['request', 'gateway, phase', 'n', 'p50', 'p90', 'max'],
              rows: [...latencyRows('conversations'), ...latencyRows('report')],
            },
          },
          {
            caption: 'The attackers’ requests',
            table: {
              columns: [
                'attack',
                'requests',
                'answered 200',
                'refused (429 / 503)',
                'with Retry-After',
                'other',
              ],
              rows: [
                attackRow(
                  `flood on gateway 1: POST /mcp, ${MCP_BATCH} calls each`,
                  flood1.mcp,
                  floodS,
                  `${flood1.mcp.ok} (${flood1.mcp.callsAnswered} of ${flood1.mcp.callsSent} calls)`,
                ),
                attackRow(
                  `flood on gateway 1: reports and comparisons of ${batches} × ${items} items`,
                  flood1.reports,
                  floodS,
                  String(flood1.reports.ok),
                ),
                attackRow(
                  `paced on gateway 2 (no cache): reports and comparisons, ${PACED_PER_SECOND}/s`,
                  paced1.reports,
                  floodS,
                  String(paced1.reports.ok),
                ),
              ],
            },
          },
          {
            caption: `Gateway RSS (MB): before the phase, highest sample, at its end and ${settleS} s later`,
            table: {
              columns: ['gateway, phase', 'before', 'peak', 'at the end', `${settleS} s later`],
              rows: plan.map((p) => {
                const r = phases[p.key].rss;
                return [
                  `${gatewayOf(p)}, ${p.label}`,
                  r.before,
                  p.attack ? `**${r.peak}**` : r.peak,
                  r.after,
                  r.settled,
                ];
              }),
            },
          },
        ],
        method: [
          `Two gateway processes on one database and Redis in API-key mode with the default limits (RATE_LIMIT_REQUESTS_PER_MINUTE ${REQUESTS_PER_MINUTE} per user across gateways; REPORT_SLOTS, REPORT_QUEUE_PER_USER, REPORT_QUEUE_TOTAL per gateway); gateway 1 keeps reports (REPORT_CACHE_MB default), gateway 2 keeps none (REPORT_CACHE_MB=0: every ask computes, the worst case). Three users: the attacker and a paced attacker each own ${batches} finished jury batches of ${items} items (a real ${templates}-item batch run by a worker, copied with SQL as in \`report\`); the victim owns a finished 3-item jury batch. No worker runs while measuring.`,
          `The victim sends GET /api/conversations and GET /api/batches/<its batch>/report one after another, pausing 400 ms after each pair (about 4 requests a second, well within its own limit): alone (${baselineS} s), then during an attack (${floodS} s), on each gateway.`,
          `Flood (gateway 1): the attacker runs ${lanes.mcp} loops POSTing JSON-RPC batches of ${MCP_BATCH} \`resources/list\` calls to /mcp and ${lanes.reports} loops asking every report and comparison of its batches in turn, none waiting for Retry-After. Paced reports (gateway 2): the second attacker's ${lanes.reports} loops ask the same kind of reports and comparisons of its own batches, ${PACED_PER_SECOND} a second in all (within the request limit, as in issue 33's report flood), each computed anew.`,
          'Latency = the client’s time from sending a request to having read the whole answer (node:http, keep-alive, the victim and the attackers on separate connection pools). Nothing is timed against a target: the figures are reported.',
          'Gateway RSS is VmRSS of /proc/<pid>/status, sampled every 50 ms.',
        ],
        limits: [],
        notes: [
          `The flood sent ${round((flood1.mcp.requests + flood1.reports.requests) / floodS, 1)} requests/s. Each JSON-RPC call counts against the attacker's request limit: of ${flood1.mcp.callsSent} calls ${flood1.mcp.callsAnswered} were answered, and once its ${REQUESTS_PER_MINUTE} requests of the minute were spent every further POST and report ask was refused with 429 before any work. What is left of the flood's cost is answering refusals (gateway 1's CPU in the table below).`,
        ],
        evidence: { cpu, peakRssMb: peakRss },
      };
    } finally {
      await stack.stop();
    }
  },
};
