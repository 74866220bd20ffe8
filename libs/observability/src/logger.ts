import { AsyncLocalStorage } from 'node:async_hooks';
import pino, { type Logger } from 'pino';

/** Ids of the work in progress (messageId, jobId, stage): added to every log line written inside it. */
export type LogContext = Record<string, string | number>;

const context = new AsyncLocalStorage<LogContext>();

/** Runs `work` with `fields` on every log line it writes, including lines from code it calls. */
export function withLogContext<T>(fields: LogContext, work: () => T): T {
  return context.run({ ...context.getStore(), ...fields }, work);
}

export type { Logger };

/**
 * JSON lines on stdout. Prompt and answer text may only be logged at debug; credentials are
 * redacted wherever they appear under the usual names.
 */
export function createLogger(level: string, name: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      name,
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => context.getStore() ?? {},
      redact: {
        paths: [
          'apiKey',
          'token',
          'authorization',
          '*.apiKey',
          '*.token',
          '*.authorization',
          'headers.authorization',
          'req.headers.authorization',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
