import { execFileSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import path from 'node:path';
import IORedis from 'ioredis';
import { DataSource } from 'typeorm';
import type { CpuReport } from './proc';
import type { ScenarioResult, Table } from './types';

export interface RunInfo {
  date: string;
  commit: string;
  dirty: boolean;
  machine: {
    cpu: string;
    cores: number;
    memoryGb: number;
    node: string;
    postgres: string;
    redis: string;
    os: string;
  };
  servers: string;
  /** How gateway and worker processes ran (compiled JavaScript or ts-node). */
  runtime?: string;
  quick: boolean;
  command: string;
  loadAverageAtStart: number[];
  durationS?: number;
}

const ROOT = path.resolve(__dirname, '../..');

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

export async function runInfo(
  databaseUrl: string,
  redisUrl: string,
  servers: string,
  quick: boolean,
  command: string,
): Promise<RunInfo> {
  let postgres = 'unknown';
  const db = new DataSource({ type: 'postgres', url: databaseUrl, extra: { max: 1 } });
  try {
    await db.initialize();
    const [row]: { version: string }[] = await db.query('SELECT version()');
    postgres = row.version.split(' on ')[0];
  } catch {
    // reported as unknown
  } finally {
    await db.destroy().catch(() => undefined);
  }
  let redis = 'unknown';
  const client = new IORedis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await client.connect();
    const info = await client.info('server');
    redis = `Redis ${/redis_version:(\S+)/.exec(info)?.[1] ?? '?'}`;
  } catch {
    // reported as unknown
  } finally {
    client.disconnect();
  }
  let os: string = process.platform;
  try {
    os = execFileSync('uname', ['-sr'], { encoding: 'utf8' }).trim();
  } catch {
    // platform only
  }
  return {
    date: new Date().toISOString(),
    commit: git(['rev-parse', '--short', 'HEAD']) || 'unknown',
    dirty: git(['status', '--porcelain', '--untracked-files=no']).length > 0,
    machine: {
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      memoryGb: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
      node: process.version,
      postgres,
      redis,
      os,
    },
    servers,
    quick,
    command,
    loadAverageAtStart: loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

const cell = (value: string | number) =>
  String(typeof value === 'number' && !Number.isFinite(value) ? '–' : value).replaceAll('|', '\\|');

export function markdownTable(table: Table): string {
  const lines = [
    `| ${table.columns.map(cell).join(' | ')} |`,
    `|${table.columns.map(() => '---').join('|')}|`,
    ...table.rows.map((row) => `| ${row.map(cell).join(' | ')} |`),
  ];
  return lines.join('\n');
}

function cpuTable(reports: Record<string, CpuReport>): string {
  const labels = [...new Set(Object.values(reports).flatMap((r) => Object.keys(r.processes)))];
  const windows = Object.keys(reports);
  const rows = labels.map((label) => [
    label,
    ...windows.map((w) => {
      const p = reports[w].processes[label];
      return p ? `${p.pctOfCore}% (${p.cpuS} s)` : '–';
    }),
  ]);
  rows.push(['other processes on the machine', ...windows.map((w) => `${reports[w].otherPctOfCore}%`)]);
  rows.push([
    'machine busy (all cores) / window',
    ...windows.map((w) => `${reports[w].machineBusyPct}% / ${reports[w].seconds} s`),
  ]);
  return markdownTable({ columns: ['CPU, % of one core', ...windows], rows });
}

function rssTable(peaks: Record<string, Record<string, number>>): string {
  const labels = [...new Set(Object.values(peaks).flatMap((p) => Object.keys(p)))].filter(
    (l) => !/postgres/.test(l),
  );
  const windows = Object.keys(peaks);
  return markdownTable({
    columns: ['peak RSS (MB)', ...windows],
    rows: labels.map((label) => [label, ...windows.map((w) => peaks[w][label] ?? '–')]),
  });
}

const verdict = (met: boolean | null) => (met === null ? 'not measured' : met ? 'met' : 'not met');

export function renderMarkdown(info: RunInfo, results: ScenarioResult[], extra: string[] = []): string {
  const out: string[] = [];
  out.push('# Benchmarks');
  out.push('');
  out.push(
    'Written by `npm run bench` (bench/run.ts): it starts the real stack — gateway and worker processes, ' +
      'PostgreSQL, Redis — with the simulated provider at a fixed per-call latency (`SIM_LATENCY_JITTER=0`), ' +
      'runs each scenario and measures from what a Socket.IO client receives and what PostgreSQL holds. ' +
      'The same figures are in [bench/results.json](bench/results.json). These are measurements of one run ' +
      'on one machine, not a timed test: nothing fails when a target is missed. On a shared virtual ' +
      'machine the same commit measures differently from run to run (here, by up to a fifth between two ' +
      'runs minutes apart): compare figures from runs made together.',
  );
  out.push('');
  out.push('## Machine and run');
  out.push('');
  out.push(
    markdownTable({
      columns: ['', ''],
      rows: [
        ['date', info.date],
        ['commit', `${info.commit}${info.dirty ? ' (with uncommitted changes in the tree)' : ''}`],
        ['CPU', `${info.machine.cores} × ${info.machine.cpu}`],
        ['memory', `${info.machine.memoryGb} GB`],
        ['OS', info.machine.os],
        ['Node.js', info.machine.node],
        ['PostgreSQL', info.machine.postgres],
        ['Redis', info.machine.redis],
        ['servers', info.servers],
        ['gateway and worker processes', info.runtime ?? '?'],
        ['load average at start (1, 5, 15 min)', info.loadAverageAtStart.join(', ')],
        ['command', `\`${info.command}\``],
        ['duration', `${info.durationS ?? '?'} s`],
      ],
    }),
  );
  out.push('');
  out.push('## Summary');
  out.push('');
  out.push(
    markdownTable({
      columns: ['scenario', 'target', 'measured', 'result'],
      rows: results.flatMap((r) =>
        r.error
          ? [[r.name, r.target, `harness failed: ${r.error}`, 'not measured']]
          : r.checks.map((c, i) => [
              i === 0 ? r.name : '',
              `${c.what}: ${c.target}`,
              c.value,
              verdict(c.met),
            ]),
      ),
    }),
  );
  out.push('');
  for (const r of results) {
    out.push(`## ${r.title} (\`${r.name}\`)`);
    out.push('');
    out.push(
      `Target: ${r.target}. Result: **${verdict(r.met)}**. Took ${r.durationS} s; load average at start ${r.loadAverage.join(', ')}.`,
    );
    out.push('');
    if (r.error) {
      out.push(`**The harness failed:** ${r.error}`);
      out.push('');
    }
    out.push(
      `Parameters: ${Object.entries(r.parameters)
        .map(([k, v]) => `${k} = ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
        .join('; ')}.`,
    );
    out.push('');
    for (const { caption, table } of r.tables) {
      if (caption) {
        out.push(caption);
        out.push('');
      }
      out.push(markdownTable(table));
      out.push('');
    }
    if (r.checks.length > 0) {
      out.push(
        markdownTable({
          columns: ['check', 'target', 'measured', 'result'],
          rows: r.checks.map((c) => [c.what, c.target, c.value, verdict(c.met)]),
        }),
      );
      out.push('');
    }
    if (r.method.length > 0) {
      out.push('How it is measured:');
      out.push('');
      for (const line of r.method) out.push(`- ${line}`);
      out.push('');
    }
    if (r.limits.length > 0) {
      out.push('What limits it:');
      out.push('');
      for (const line of r.limits) out.push(`- ${line}`);
      out.push('');
    }
    if (r.notes && r.notes.length > 0) {
      out.push('Observations:');
      out.push('');
      for (const line of r.notes) out.push(`- ${line}`);
      out.push('');
    }
    if (r.evidence.cpu && Object.keys(r.evidence.cpu).length > 0) {
      out.push(cpuTable(r.evidence.cpu));
      out.push('');
    }
    if (r.evidence.peakRssMb && Object.keys(r.evidence.peakRssMb).length > 0) {
      out.push(rssTable(r.evidence.peakRssMb));
      out.push('');
    }
  }
  out.push(...extra);
  out.push('## Running it');
  out.push('');
  out.push(
    [
      '```bash',
      'npm run bench                      # every scenario, full size (~6 min on 2 cores); writes BENCHMARKS.md and bench/results.json',
      'npm run bench -- --quick           # every scenario scaled down (~2 min); writes to a temporary directory',
      'npm run bench -- --only fan-out    # one scenario (comma-separated names for several)',
      'npm run bench -- --only cpu,http-provider # CPU per deliberation per mode and process; the models over HTTP',
      'npm run bench -- --only quorum     # council under heavy-tailed latencies, every member vs a quorum of n−1',
      'npm run bench -- --only amplification # one user floods (MCP batches, reports): another user’s latency',
      'npm run bench -- faults           # faults under load (worker/gateway killed, Redis restarted empty, PostgreSQL down); opt-in, never in the default or --quick run',
      'npm run bench -- --out /tmp/b      # write BENCHMARKS.md and results.json there',
      'npm run bench -- --servers shared  # use DATABASE_URL / REDIS_URL (or the local defaults) instead of private servers',
      'npm run bench -- --runtime ts-node # run gateway and workers under ts-node instead of compiled JavaScript',
      'npm run bench -- --no-profile      # skip the CPU profiles full runs take (worker; gateway too in cpu)',
      '```',
      '',
      'By default the benchmark starts its own PostgreSQL cluster (initdb, default durability: fsync and ' +
        'synchronous commit on; `max_connections` raised because a worker’s pool grows with ' +
        '`WORKER_CONCURRENCY`) and its own Redis, and removes both at the end. It exits 0 when the harness ran, ' +
        'whether or not targets were met, and non-zero when a deliberation never finished or fan-out lost or ' +
        'duplicated an event. Gateway and workers run as compiled JavaScript (tsc into a temporary directory, ' +
        'as `npm run build` does), so their memory is what production processes use, not ts-node’s.',
    ].join('\n'),
  );
  out.push('');
  return out.join('\n');
}

export async function formatJson(value: unknown, filePath: string): Promise<string> {
  const text = JSON.stringify(value, null, 2);
  try {
    const prettier = await import('prettier');
    const options = (await prettier.resolveConfig(filePath)) ?? {};
    return await prettier.format(text, { ...options, parser: 'json', filepath: filePath });
  } catch {
    return `${text}\n`;
  }
}
