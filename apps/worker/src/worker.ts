import { NestFactory } from '@nestjs/core';
import type { ConclaveConfig } from '@conclave/config';
import { STAGE_QUEUE_DEFINITION } from '@conclave/contracts';
import { createLogger, type Logger } from '@conclave/observability';
import { JsonNestLogger } from '@conclave/platform';
import { WorkerLifecycle } from './lifecycle';
import type { ProviderOverrides } from './provider';
import { WorkerModule } from './worker.module';

export { buildProvider } from './provider';

export interface RunningWorker {
  /** Port of the worker's own HTTP server (health and metrics). */
  readonly httpPort: number;
  close(): Promise<void>;
}

export interface WorkerOverrides extends ProviderOverrides {
  /** Replaces the JSON logger (tests pass a silent one). */
  logger?: Logger;
}

/**
 * The worker process: a Nest application context (WorkerModule) whose BullMQ processor runs the
 * stage queue's jobs through the deliberation engine, and nothing else. Resolves once it consumes
 * and its health/metrics port listens; `close()` drains (WORKER_SHUTDOWN_TIMEOUT_MS) and closes.
 */
export async function startWorker(
  config: ConclaveConfig,
  overrides: WorkerOverrides = {},
): Promise<RunningWorker> {
  const logger = overrides.logger ?? createLogger(config.logLevel, 'worker');
  const app = await NestFactory.createApplicationContext(
    WorkerModule.forRoot(config, { ...overrides, logger }),
    {
      // Nest's start-up chatter stays at debug; its warnings and errors are JSON lines like the rest.
      logger: new JsonNestLogger(logger, { logAt: 'debug' }),
      // A failed start rejects (main logs it as the fatal line) instead of Nest exiting the process.
      abortOnError: false,
    },
  );
  const httpPort = app.get(WorkerLifecycle).httpPort;
  logger.info(
    { httpPort },
    `consuming ${config.queuePrefix}:${STAGE_QUEUE_DEFINITION.name} with concurrency ${config.worker.concurrency}`,
  );
  return { httpPort, close: () => app.close() };
}
