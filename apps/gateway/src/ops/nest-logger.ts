import type { LoggerService } from '@nestjs/common';
import type { Logger } from '@conclave/observability';

/** Nest's log calls as JSON lines through the shared logger; Nest's context becomes a field. */
export class JsonNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  private write(level: 'debug' | 'info' | 'warn' | 'error', message: unknown, rest: unknown[]): void {
    const context = typeof rest[rest.length - 1] === 'string' ? (rest[rest.length - 1] as string) : undefined;
    const text =
      message instanceof Error
        ? message.message
        : typeof message === 'string'
          ? message
          : JSON.stringify(message);
    this.logger[level](context ? { context } : {}, text);
  }

  log(message: unknown, ...rest: unknown[]): void {
    this.write('info', message, rest);
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
