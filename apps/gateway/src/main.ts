import 'reflect-metadata';
import { loadConfig } from '@conclave/config';
import { createLogger, logFatalErrors, routeConsoleTo } from '@conclave/observability';
import type { AddressInfo } from 'node:net';
import { createGateway } from './app';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'gateway');
  // Every line on stdout/stderr is JSON: what libraries print, and a crash's last words.
  routeConsoleTo(logger);
  logFatalErrors(logger);
  const app = await createGateway(config);
  await app.listen(config.port, process.env.HOST ?? '0.0.0.0');
  const { port } = app.getHttpServer().address() as AddressInfo;
  const auth = config.authMode === 'none' ? 'single-user mode, no API key needed' : 'API keys required';
  logger.info(
    { port },
    `listening on http://localhost:${port} (${auth}); web client at /, API docs at /api/docs`,
  );
}

main().catch((error: unknown) => {
  // Configuration errors name the variable; nothing else is worth a stack trace at start-up.
  createLogger('info', 'gateway').fatal(
    `could not start: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exit(1);
});
