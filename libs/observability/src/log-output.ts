import { formatWithOptions } from 'node:util';
import type { Logger } from './logger';

/** How long a recurring error stays quiet after it was logged (its repeats are counted). */
export const REPEAT_QUIET_MS = 30_000;
/** Distinct messages remembered at once; past that the oldest are forgotten. */
const REPEAT_KEYS = 200;

/**
 * A writer that logs each distinct message when first seen, then stays quiet about it for
 * `quietMs`; the next time it is written after that, the line says how many were left out.
 * For connections that retry on their own (ioredis, BullMQ): an outage writes a few lines, not
 * one per reconnection attempt.
 */
export function repeatLimited(
  write: (message: string) => void,
  quietMs = REPEAT_QUIET_MS,
): (message: string) => void {
  const seen = new Map<string, { at: number; left: number }>();
  return (message) => {
    const now = Date.now();
    const last = seen.get(message);
    if (last && now - last.at < quietMs) {
      last.left++;
      return;
    }
    seen.delete(message);
    if (seen.size >= REPEAT_KEYS) seen.delete(seen.keys().next().value as string);
    seen.set(message, { at: now, left: 0 });
    write(last?.left ? `${message} (${last.left} more like it since the last report)` : message);
  };
}

/** An 'error' listener for a connection that reconnects by itself: one line per kind of error, repeat-limited. */
export function connectionErrorLogger(
  write: (message: string) => void,
  quietMs = REPEAT_QUIET_MS,
): (error: unknown) => void {
  const limited = repeatLimited(write, quietMs);
  return (error) => limited(error instanceof Error ? error.message || error.name : String(error));
}

const CONSOLE_LEVELS = {
  debug: 'debug',
  trace: 'debug',
  log: 'info',
  info: 'info',
  warn: 'warn',
  error: 'error',
} as const;

/**
 * Whatever a library prints with `console` (BullMQ, ioredis without a listener, Node warnings
 * routed through it) leaves as JSON lines of `logger`, repeat-limited; an Error argument gives
 * its message, its stack only at debug. For a process's entry point; returns the undo.
 */
export function routeConsoleTo(logger: Logger, quietMs = REPEAT_QUIET_MS): () => void {
  const original = { ...console };
  for (const [method, level] of Object.entries(CONSOLE_LEVELS) as [
    keyof typeof CONSOLE_LEVELS,
    (typeof CONSOLE_LEVELS)[keyof typeof CONSOLE_LEVELS],
  ][]) {
    const write = repeatLimited(
      (message) => logger[level]({ source: `console.${method}` }, message),
      quietMs,
    );
    console[method] = (...args: unknown[]) => {
      const message = formatWithOptions(
        { breakLength: Infinity },
        ...args.map((a) => (a instanceof Error ? `${a.name}: ${a.message}` : a)),
      );
      for (const a of args)
        if (a instanceof Error && a.stack)
          logger.debug({ source: `console.${method}`, stack: a.stack }, 'stack');
      write(message);
    };
  }
  return () => Object.assign(console, original);
}

/**
 * The last words of a process as a JSON line instead of Node's stack dump on stderr: an
 * exception nobody caught or a rejection nobody handled is logged (stack at debug), then the
 * process exits with status 1, as Node would have.
 */
export function logFatalErrors(logger: Logger): void {
  const die = (kind: string) => (error: unknown) => {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    if (error instanceof Error && error.stack) logger.debug({ stack: error.stack }, 'stack');
    logger.fatal(`${kind}: ${message}`);
    process.exit(1);
  };
  process.on('uncaughtException', die('uncaught exception'));
  process.on('unhandledRejection', die('unhandled rejection'));
}
