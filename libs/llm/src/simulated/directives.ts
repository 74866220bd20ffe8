/**
 * Simulated model ids: `sim/<persona>` followed by any number of `:<directive>` parts, e.g.
 * `sim/athena:fail@rank` (fails only when asked to rank) or `sim/hermes:delay2000:rank3`.
 *
 * - `fail[@kind]`       the call fails with a non-retryable provider error
 * - `timeout[@kind]`    the call never answers (it ends when the caller's timeout fires)
 * - `malformed[@kind]`  the answer ignores the required format
 * - `transient[@kind]`  the first attempt fails with a retryable HTTP 503, the retry succeeds
 * - `delay<ms>[@kind]`  answer latency for this model instead of the configured one
 * - anything else       a flag the prompt's responder may read (e.g. `rank3` for council rankings)
 */
export type FaultKind = 'fail' | 'timeout' | 'malformed' | 'transient';

export interface SimDirectives {
  persona: string;
  faults: { fault: FaultKind; kind: string | null }[];
  delays: { ms: number; kind: string | null }[];
  flags: string[];
}

const FAULTS: readonly string[] = ['fail', 'timeout', 'malformed', 'transient'];

export function parseSimModel(model: string): SimDirectives {
  const name = model.includes('/') ? model.slice(model.indexOf('/') + 1) : model;
  const [persona, ...parts] = name.split(':');
  const directives: SimDirectives = { persona, faults: [], delays: [], flags: [] };
  for (const part of parts) {
    const [head, kind] = part.split('@');
    const delay = /^delay(\d+)$/.exec(head);
    if (FAULTS.includes(head)) directives.faults.push({ fault: head as FaultKind, kind: kind ?? null });
    else if (delay) directives.delays.push({ ms: Number(delay[1]), kind: kind ?? null });
    else directives.flags.push(part);
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
