import { readFileSync, readdirSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times (USER_HZ; 100 on Linux). */
const HZ = 100;

/** Resident set size of a process in MB (VmRSS of /proc/<pid>/status), or null once it is gone. */
export function rssMb(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

interface StatFields {
  ppid: number;
  /** utime + stime, seconds */
  cpu: number;
  /** cutime + cstime: reaped children, seconds */
  childrenCpu: number;
}

function stat(pid: number): StatFields | null {
  try {
    const raw = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold spaces: the fields start after the last ')'.
    const fields = raw.slice(raw.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state): utime is field 14, stime 15, cutime 16, cstime 17, ppid 4.
    return {
      ppid: Number(fields[1]),
      cpu: (Number(fields[11]) + Number(fields[12])) / HZ,
      childrenCpu: (Number(fields[13]) + Number(fields[14])) / HZ,
    };
  } catch {
    return null;
  }
}

/** CPU seconds a process has used (user + system). */
export function cpuSeconds(pid: number): number | null {
  return stat(pid)?.cpu ?? null;
}

/** CPU seconds of a server and all its children, living and reaped (PostgreSQL's backends). */
export function treeCpuSeconds(pid: number): number | null {
  const root = stat(pid);
  if (!root) return null;
  let total = root.cpu + root.childrenCpu;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const child = stat(Number(entry));
    if (child?.ppid === pid) total += child.cpu;
  }
  return total;
}

/** Busy and total CPU seconds of the whole machine, from /proc/stat. */
export function machineCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const values = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest times are included in user)
  const [user, nice, system, idle, iowait, irq, softirq, steal] = values;
  const busy = user + nice + system + irq + softirq + steal;
  return { busy: busy / HZ, total: (busy + idle + iowait) / HZ };
}

export interface Tracked {
  label: string;
  pid: number;
  /** Counts its children too (a server with backends). */
  tree?: boolean;
}

export interface CpuSnapshot {
  at: number;
  machine: { busy: number; total: number };
  processes: Record<string, number>;
  bench: number;
}

export interface CpuReport {
  seconds: number;
  /** Share of the machine's CPU time that was busy, % of all cores. */
  machineBusyPct: number;
  cores: number;
  /** CPU seconds per process over the window and as % of one core. */
  processes: Record<string, { cpuS: number; pctOfCore: number }>;
  /** Busy CPU not used by any process of the benchmark (other tenants of the machine). */
  otherPctOfCore: number;
}

/**
 * Samples the resident memory of tracked processes every `intervalMs` (the maximum is what the
 * scenarios report) and takes CPU snapshots on request.
 */
export class ProcSampler {
  private readonly tracked = new Map<string, Tracked>();
  private readonly peaks = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly intervalMs = 200) {}

  track(entry: Tracked): void {
    this.tracked.set(entry.label, entry);
    this.sampleOne(entry);
  }

  untrack(label: string): void {
    this.tracked.delete(label);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Forgets the peaks so far (a new measurement window starts). */
  resetPeaks(): void {
    this.peaks.clear();
    this.sample();
  }

  /** Peak RSS in MB per tracked label since the last reset. */
  peakRss(): Record<string, number> {
    return Object.fromEntries([...this.peaks].map(([label, mb]) => [label, Math.round(mb)]));
  }

  cpu(): CpuSnapshot {
    const processes: Record<string, number> = {};
    for (const entry of this.tracked.values()) {
      const seconds = entry.tree ? treeCpuSeconds(entry.pid) : cpuSeconds(entry.pid);
      if (seconds !== null) processes[entry.label] = seconds;
    }
    const usage = process.cpuUsage();
    return {
      at: Date.now(),
      machine: machineCpu(),
      processes,
      bench: (usage.user + usage.system) / 1e6,
    };
  }

  /**
   * CPU milliseconds per unit of work (a deliberation) per process, and what rate the machine's
   * cores would allow if the benchmark's processes had them to themselves.
   */
  static perUnit(
    report: CpuReport,
    units: number,
  ): { msPerUnit: Record<string, number>; totalMs: number; ceilingPerS: number } {
    const msPerUnit: Record<string, number> = {};
    let totalMs = 0;
    for (const [label, { cpuS }] of Object.entries(report.processes)) {
      if (label === 'bench client') continue;
      const ms = (cpuS * 1000) / units;
      msPerUnit[label] = Math.round(ms * 10) / 10;
      totalMs += ms;
    }
    return {
      msPerUnit,
      totalMs: Math.round(totalMs * 10) / 10,
      ceilingPerS: totalMs > 0 ? Math.round((report.cores * 1000) / totalMs) : Number.NaN,
    };
  }

  static report(from: CpuSnapshot, to: CpuSnapshot, cores: number): CpuReport {
    const seconds = (to.at - from.at) / 1000;
    const pct = (cpuS: number) => (seconds > 0 ? Math.round((cpuS / seconds) * 100) : 0);
    const processes: CpuReport['processes'] = {};
    let ours = 0;
    for (const [label, end] of Object.entries(to.processes)) {
      const cpuS = end - (from.processes[label] ?? 0);
      ours += cpuS;
      processes[label] = { cpuS: Math.round(cpuS * 10) / 10, pctOfCore: pct(cpuS) };
    }
    const bench = to.bench - from.bench;
    ours += bench;
    processes['bench client'] = { cpuS: Math.round(bench * 10) / 10, pctOfCore: pct(bench) };
    const busy = to.machine.busy - from.machine.busy;
    const total = to.machine.total - from.machine.total;
    return {
      seconds: Math.round(seconds * 10) / 10,
      machineBusyPct: total > 0 ? Math.round((busy / total) * 100) : 0,
      cores,
      processes,
      otherPctOfCore: Math.max(0, pct(busy - ours)),
    };
  }

  private sample(): void {
    for (const entry of this.tracked.values()) this.sampleOne(entry);
  }

  private sampleOne(entry: Tracked): void {
    if (entry.tree) return; // a server's RSS is shared memory mostly; not reported
    const mb = rssMb(entry.pid);
    if (mb !== null) this.peaks.set(entry.label, Math.max(this.peaks.get(entry.label) ?? 0, mb));
  }
}
