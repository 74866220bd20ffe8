import { AsyncLocalStorage } from 'node:async_hooks';
import pino, { type LogFn, type Logger } from 'pino';

/** Ids of the work in progress (messageId, jobId, stage): added to every log line written inside it. */
export type LogContext = Record<string, string | number>;

const context = new AsyncLocalStorage<LogContext>();

/** Runs `work` with `fields` on every log line it writes, including lines from code it calls. */
export function withLogContext<T>(fields: LogContext, work: () => T): T {
  return context.run({ ...context.getStore(), ...fields }, work);
}

export type { Logger };

/** Credentials inside free text, and what each is replaced with. */
const SECRET_PATTERNS: [RegExp, string][] = [
  // The user and password of a URL (provider base URLs, DATABASE_URL, REDIS_URL): the host stays.
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/gi, '$1[redacted]@'],
  // A header quoted whole (`Authorization: Basic dXNl…`), and bearer tokens anywhere.
  [/\b(authorization["']?\s*[:=]\s*["']?(?:(?:Bearer|Basic)\s+)?)[^\s"',;]+/gi, '$1[redacted]'],
  [/\bBearer\s+(?!\[redacted\])[A-Za-z0-9._~+/=-]{8,}/g, 'Bearer [redacted]'],
  // Provider keys (OpenAI, OpenRouter: sk-…) and Conclave API keys (ck_…, 43 characters after the prefix).
  [/\bsk-[A-Za-z0-9_-]{16,}/g, '[redacted]'],
  [/\bck_[A-Za-z0-9_-]{20,}/g, '[redacted]'],
];

/** `text` without the credentials it may quote: a URL's user and password, bearer tokens, API keys. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

const SCRUB_DEPTH = 6;

/** A copy of a log argument with every string in it passed through redactSecrets; the original is untouched. */
function scrub(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (depth >= SCRUB_DEPTH || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((item) => scrub(item, depth + 1));
  if (value instanceof Error) {
    // Same prototype, so the logger still serializes it as an error (type, message, stack).
    const copy = Object.create(Object.getPrototypeOf(value) as object) as Record<string, unknown>;
    for (const key of Object.getOwnPropertyNames(value)) {
      copy[key] = scrub((value as unknown as Record<string, unknown>)[key], depth + 1);
    }
    return copy;
  }
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, scrub(item, depth + 1)]));
}

/**
 * JSON lines on stdout. Prompt and answer text may only be logged at debug; credentials are
 * redacted wherever they appear under the usual names, and inside any text logged (redactSecrets).
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
      hooks: {
        logMethod(args, method) {
          return method.apply(this, args.map((arg) => scrub(arg)) as Parameters<LogFn>);
        },
      },
      redact: {
        paths: [
          'apiKey',
          'token',
          'authorization',
          'password',
          '*.apiKey',
          '*.token',
          '*.authorization',
          '*.password',
          'headers.authorization',
          'req.headers.authorization',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
