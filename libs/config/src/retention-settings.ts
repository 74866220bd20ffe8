import { ConfigError } from './errors';

/** The longest retention taken (a typo guard: a hundred years). */
export const RETENTION_MAX_DAYS = 36_500;
export const LIFECYCLE_DEFAULT_INTERVAL_MS = 3_600_000;
export const RETENTION_DEFAULT_CHUNK = 500;
export const RETENTION_MAX_CHUNK = 10_000;

/**
 * The data lifecycle (issue 23): what the fleet-wide `data-lifecycle` job of the workers does.
 * - `retentionDays` (RETENTION_DAYS): finished conversations and batches whose last activity is
 *   older than this many days are deleted; null (unset, the default) keeps everything.
 * - `intervalMs` (LIFECYCLE_INTERVAL_MS): how often the job runs (it also creates the event
 *   partitions ahead of time, with retention off too).
 * - `chunkSize` (RETENTION_CHUNK_SIZE): conversations deleted per transaction.
 */
export interface LifecycleSettings {
  retentionDays: number | null;
  intervalMs: number;
  chunkSize: number;
}

/** A whole number from `min` to `max`, or `fallback` when unset; the error names the variable. */
function wholeNumber(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  min: number,
  max: number,
  unit: string,
): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number of ${unit} from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

export function parseLifecycleSettings(env: NodeJS.ProcessEnv): LifecycleSettings {
  const rawDays = env.RETENTION_DAYS?.trim();
  let retentionDays: number | null = null;
  if (rawDays !== undefined && rawDays !== '') {
    const days = /^\d+$/.test(rawDays) ? Number(rawDays) : NaN;
    if (!Number.isSafeInteger(days) || days < 1 || days > RETENTION_MAX_DAYS) {
      throw new ConfigError(
        `RETENTION_DAYS must be a whole number of days from 1 to ${RETENTION_MAX_DAYS} ` +
          `(leave it unset to keep everything), got "${rawDays}"`,
      );
    }
    retentionDays = days;
  }
  return {
    retentionDays,
    intervalMs: wholeNumber(
      env,
      'LIFECYCLE_INTERVAL_MS',
      LIFECYCLE_DEFAULT_INTERVAL_MS,
      100,
      7 * 24 * 3_600_000,
      'milliseconds',
    ),
    chunkSize: wholeNumber(
      env,
      'RETENTION_CHUNK_SIZE',
      RETENTION_DEFAULT_CHUNK,
      1,
      RETENTION_MAX_CHUNK,
      'conversations',
    ),
  };
}
