import 'reflect-metadata';
import { loadConfig } from '@conclave/config';
import { createLogger, logFatalErrors, routeConsoleTo } from '@conclave/observability';
import { startWorker } from './worker';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'worker');
  // Every line on stdout/stderr is JSON: what libraries print, and a crash's last words.
  routeConsoleTo(logger);
  logFatalErrors(logger);
  const worker = await startWorker(config, { logger });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info(
      `${signal}: finishing active jobs (at most ${config.worker.shutdownTimeoutMs} ms), then exiting`,
    );
    worker.close().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error(`could not stop cleanly: ${error instanceof Error ? error.message : String(error)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  // Configuration errors name the variable; nothing else is worth a stack trace at start-up.
  createLogger('info', 'worker').fatal(
    `could not start: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exit(1);
});
