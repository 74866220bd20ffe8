import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { sleep } from './stats';
import type { Table } from './types';

/**
 * The preload that profiles between two SIGWINCH (see cpu-profile.js): a signal whose default is
 * to be ignored and that Nest's shutdown hooks do not listen to (the gateway's enableShutdownHooks()
 * shuts it down on SIGUSR2).
 */
export const PROFILE_PRELOAD = path.join(__dirname, 'cpu-profile.js');

export function profilerEnv(file: string): Record<string, string> {
  const existing = process.env.NODE_OPTIONS ? `${process.env.NODE_OPTIONS} ` : '';
  return { NODE_OPTIONS: `${existing}--require ${PROFILE_PRELOAD}`, BENCH_CPU_PROFILE: file };
}

export function startProfile(child: ChildProcess): void {
  child.kill('SIGWINCH');
}

/** Stops the profiler and waits for the file. */
export async function stopProfile(child: ChildProcess, file: string, timeoutMs = 30_000): Promise<void> {
  child.kill('SIGWINCH');
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(file)) {
    if (existsSync(`${file}.error`)) throw new Error(readFileSync(`${file}.error`, 'utf8'));
    if (Date.now() > deadline) throw new Error(`no CPU profile at ${file}`);
    await sleep(200);
  }
  // written with one writeFileSync; give a large file a moment
  await sleep(500);
}

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: CpuProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileSummary {
  /** Length of the profiled window, seconds. */
  seconds: number;
  /** Share of the window the process was busy (not idle), %. */
  busyPct: number;
  /** Busy time per part of the code (self time), % of busy time. */
  byCategory: { category: string; pct: number }[];
  /** Functions with the most self time, % of busy time. */
  topFunctions: { fn: string; where: string; pct: number }[];
}

function category(url: string, fn: string): string {
  if (fn === '(idle)') return '(idle)';
  if (fn === '(garbage collector)') return 'garbage collection';
  if (fn === '(program)') return 'V8/native (program)';
  if (fn === '(root)') return '(root)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return `npm: ${pkg[1]}`;
  if (url.startsWith('node:')) return `node: ${url.slice(5).split('/').slice(0, 2).join('/')}`;
  const lib = /\/(libs\/[^/]+|apps\/[^/]+)\//.exec(url);
  if (lib) return lib[1];
  if (url === '') return 'native code (writev and other syscalls, buffer copies)';
  return 'other';
}

/** Self time per category and per function from a .cpuprofile. */
export function summarizeProfile(file: string): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  // timeDeltas[i] is the time before sample i; attribute each delta to the sample it ends in.
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  let total = 0;
  let idle = 0;
  const categories = new Map<string, number>();
  const functions = new Map<string, { fn: string; where: string; us: number }>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    total += us;
    const { functionName, url, lineNumber } = node.callFrame;
    const cat = category(url, functionName);
    if (cat === '(idle)') {
      idle += us;
      continue;
    }
    categories.set(cat, (categories.get(cat) ?? 0) + us);
    const where = url ? `${url.replace(/^.*\/(node_modules|libs|apps)\//, '$1/')}:${lineNumber + 1}` : '';
    const key = `${functionName}|${where}`;
    const entry = functions.get(key) ?? { fn: functionName || '(anonymous)', where, us: 0 };
    entry.us += us;
    functions.set(key, entry);
  }
  const busy = Math.max(1, total - idle);
  const pct = (us: number) => Math.round((us / busy) * 1000) / 10;
  return {
    seconds: Math.round((profile.endTime - profile.startTime) / 1e5) / 10,
    busyPct: Math.round(((total - idle) / Math.max(1, total)) * 100),
    byCategory: [...categories]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 14)
      .map(([c, us]) => ({ category: c, pct: pct(us) })),
    topFunctions: [...functions.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, 15)
      .map((f) => ({ fn: f.fn, where: f.where, pct: pct(f.us) })),
  };
}

/** The two tables of a profile for a report: self time by part of the code, then by function. */
export function profileTables(
  profile: ProfileSummary,
  what: string,
  process = 'Worker',
): { caption?: string; table: Table }[] {
  return [
    {
      caption: `${process} CPU profile ${what} (${profile.seconds} s, busy ${profile.busyPct}% of the window), self time by part of the code:`,
      table: {
        columns: ['part', '% of busy time'],
        rows: profile.byCategory.map((c) => [c.category, c.pct]),
      },
    },
    {
      caption: 'Functions with the most self time:',
      table: {
        columns: ['function', 'where', '% of busy time'],
        rows: profile.topFunctions.map((f) => [f.fn, f.where, f.pct]),
      },
    },
  ];
}
