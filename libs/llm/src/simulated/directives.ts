/**
 * Simulated model ids: `sim/<persona>` followed by any number of `:<directive>` parts, e.g.
 * `sim/athena:fail@rank` (fails only when asked to rank) or `sim/hermes:delay2000:rank3`.
 *
 * - `fail[@kind]`       the call fails with a non-retryable provider error
 * - `timeout[@kind]`    the call never answers (it ends when the caller's timeout fires)
 * - `malformed[@kind]`  the answer ignores the required format
 * - `transient[@kind]`  the first attempt fails with a retryable HTTP 503, the retry succeeds
 * - `delay<ms>[@kind]`  answer latency for this model instead of the configured one
 * - `heavy[<ms>][@kind]` a heavy-tailed latency: lognormal with median <ms> (default: the configured
 *                       latency) and σ = 1 (p95 ≈ 5× the median, p99 ≈ 10×), drawn per call from
 *                       SIM_SEED, the model id and the prompt, so a run repeats exactly
 * - anything else       a flag the prompt's responder may read (e.g. `rank3` for council rankings)
 */
export type FaultKind = 'fail' | 'timeout' | 'malformed' | 'transient';

export interface SimDirectives {
  persona: string;
  faults: { fault: FaultKind; kind: string | null }[];
  delays: { ms: number; kind: string | null }[];
  flags: string[];
  /** `heavy` directives; absent when there are none. */
  heavy?: { medianMs: number | null; kind: string | null }[];
}

const FAULTS: readonly string[] = ['fail', 'timeout', 'malformed', 'transient'];

export function parseSimModel(model: string): SimDirectives {
  const name = model.includes('/') ? model.slice(model.indexOf('/') + 1) : model;
  const [persona, ...parts] = name.split(':');
  const directives: SimDirectives = { persona, faults: [], delays: [], flags: [] };
  for (const part of parts) {
    const [head, kind] = part.split('@');
    const delay = /^delay(\d+)$/.exec(head);
    const heavy = /^heavy(\d+)?$/.exec(head);
    if (FAULTS.includes(head)) directives.faults.push({ fault: head as FaultKind, kind: kind ?? null });
    else if (delay) directives.delays.push({ ms: Number(delay[1]), kind: kind ?? null });
    else if (heavy) {
      (directives.heavy ??= []).push({
        medianMs: heavy[1] === undefined ? null : Number(heavy[1]),
        kind: kind ?? null,
      });
    } else directives.flags.push(part);
  }
  return directives;
}

export function faultFor(directives: SimDirectives, promptKind: string): FaultKind | null {
  const match = directives.faults.find((f) => f.kind === null || f.kind === promptKind);
  return match ? match.fault : null;
}

export function delayFor(directives: SimDirectives, promptKind: string): number | null {
  return directives.delays.find((d) => d.kind === null || d.kind === promptKind)?.ms ?? null;
}

/** The `heavy` directive that applies to a prompt of `promptKind`, if any. */
export function heavyFor(directives: SimDirectives, promptKind: string): { medianMs: number | null } | null {
  return directives.heavy?.find((h) => h.kind === null || h.kind === promptKind) ?? null;
}

/** Spread of the `heavy` latency's logarithm: p95 ≈ e^1.645 ≈ 5.2× the median. */
export const HEAVY_SIGMA = 1;
/** The longest a `heavy` latency draws, as a multiple of its median (p ≈ 1e-5 beyond). */
export const HEAVY_MAX_FACTOR = 100;

/**
 * A lognormal latency with the given median, from two uniform numbers in [0, 1) (Box–Muller):
 * deterministic for the same numbers.
 */
export function heavyTailedLatency(medianMs: number, u1: number, u2: number): number {
  const z = Math.sqrt(-2 * Math.log(1 - u1)) * Math.cos(2 * Math.PI * u2);
  return Math.round(Math.min(medianMs * Math.exp(HEAVY_SIGMA * z), medianMs * HEAVY_MAX_FACTOR));
}
