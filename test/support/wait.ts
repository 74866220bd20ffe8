/**
 * Waiting in tests: poll a condition with a generous deadline (the host may be loaded), never a
 * fixed sleep standing in for "long enough".
 */

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

type Truthy<T> = Exclude<Awaited<T>, null | undefined | false | 0 | ''>;

/**
 * Polls `probe` (every 25 ms) until it returns a truthy value, and returns that value (so a probe
 * can hand back what it found: a row, an event). Throws "timed out waiting for <what>" after
 * `timeoutMs` (60 s unless given): `until(probe)`, `until(probe, 10_000)` or `until(probe, 'the batch', 10_000)`.
 */
export async function until<T>(probe: () => T | Promise<T>, timeoutMs?: number): Promise<Truthy<T>>;
export async function until<T>(
  probe: () => T | Promise<T>,
  what: string,
  timeoutMs?: number,
): Promise<Truthy<T>>;
export async function until<T>(
  probe: () => T | Promise<T>,
  whatOrTimeout: string | number = 'a condition',
  timeoutMs = 60_000,
): Promise<Truthy<T>> {
  const what = typeof whatOrTimeout === 'string' ? whatOrTimeout : 'a condition';
  const deadline = Date.now() + (typeof whatOrTimeout === 'number' ? whatOrTimeout : timeoutMs);
  for (;;) {
    const value = await probe();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/**
 * Polls `check` (every `intervalMs`, 25 by default) for at most `timeoutMs`: true as soon as it
 * holds, false if it never did (for `expect(await eventually(...)).toBe(true)`, or `.toBe(false)`
 * for what must not happen). A check that asks the rate-limited API wants a longer interval.
 */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  intervalMs = 25,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(intervalMs);
  }
  return check();
}
