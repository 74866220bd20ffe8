/**
 * A string read from Redis (a pub/sub message, a sorted-set member) parsed as JSON; undefined when
 * it is not JSON (JSON itself has no undefined). Its reader then checks the shape: these strings are
 * written by this code, but read strictly.
 */
export function readJson(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}
