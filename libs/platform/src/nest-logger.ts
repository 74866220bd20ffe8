import type { LoggerService } from '@nestjs/common';
import type { Logger } from '@conclave/observability';

export interface JsonNestLoggerOptions {
  /**
   * The level of Nest's `log` calls, which are its start-up chatter (modules initialized, routes
   * mapped): `info` by default; `debug` keeps them out of a process's info-level output.
   */
  logAt?: 'info' | 'debug';
}

/** Nest's log calls as JSON lines through the shared logger; Nest's context becomes a field. */
export class JsonNestLogger implements LoggerService {
  private readonly logAt: 'info' | 'debug';

  constructor(
    private readonly logger: Logger,
    options: JsonNestLoggerOptions = {},
  ) {
    this.logAt = options.logAt ?? 'info';
  }

  private write(level: 'debug' | 'info' | 'warn' | 'error', message: unknown, rest: unknown[]): void {
    const last = rest[rest.length - 1];
    const context = typeof last === 'string' ? last : undefined;
    const text =
      message instanceof Error
        ? message.message
        : typeof message === 'string'
          ? message
          : JSON.stringify(message);
    this.logger[level](context ? { context } : {}, text);
  }

  log(message: unknown, ...rest: unknown[]): void {
    this.write(this.logAt, message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    // Nest passes a stack as the second argument: kept out of info-level output, available at debug.
    if (typeof rest[0] === 'string' && rest.length > 1) this.logger.debug({ stack: rest[0] }, 'stack');
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
}
