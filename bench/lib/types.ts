import type { CpuReport } from './proc';
import type { BenchContext } from './stack';

/** One target of a scenario and whether this run met it. */
export interface Check {
  what: string;
  target: string;
  value: string;
  met: boolean;
}

export interface Table {
  columns: string[];
  rows: (string | number)[][];
}

/** What a scenario hands back; results.json holds one of these per scenario. */
export interface ScenarioResult {
  name: string;
  title: string;
  /** The scenario's settings (latency, workers, counts, ...). */
  parameters: Record<string, unknown>;
  /** Every figure measured, machine-readable. */
  figures: Record<string, unknown>;
  /** The target as the issue states it. */
  target: string;
  checks: Check[];
  /** Every check met (null when the scenario broke before measuring). */
  met: boolean | null;
  /** Human tables for BENCHMARKS.md. */
  tables: { caption?: string; table: Table }[];
  /** How the figures were obtained. */
  method: string[];
  /** When a target was missed: what limits it, with evidence, and what would move it. */
  limits: string[];
  /** Worth knowing beside the targets (met or not). */
  notes?: string[];
  /** Per-process CPU over the measured window(s) and peak RSS. */
  evidence: { cpu?: Record<string, CpuReport>; peakRssMb?: Record<string, Record<string, number>> };
  durationS: number;
  /** Load average of the machine when the scenario started (other tenants show here). */
  loadAverage: number[];
  /** Set when the harness itself broke (a deliberation never ended, events lost or duplicated). */
  error?: string;
}

export interface Scenario {
  name: string;
  title: string;
  target: string;
  /** Runs only when named (`--only <name>` or `npm run bench -- <name>`), never in the default or --quick run. */
  optIn?: boolean;
  run(ctx: BenchContext): Promise<Omit<ScenarioResult, 'durationS' | 'loadAverage' | 'met'>>;
}

/** A harness failure: the run is reported, and the process exits non-zero. */
export class HarnessError extends Error {}
