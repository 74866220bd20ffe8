import 'reflect-metadata';
import { loadConfig } from '@conclave/config';
import { createLogger } from '@conclave/observability';
import type { AddressInfo } from 'node:net';
import { createGateway } from './app';

async function main(): Promise<void> {
  const config = loadConfig();
  const app = await createGateway(config);
  await app.listen(config.port, process.env.HOST ?? '0.0.0.0');
  const { port } = app.getHttpServer().address() as AddressInfo;
  const auth = config.authMode === 'none' ? 'single-user mode, no API key needed' : 'API keys required';
  createLogger(config.logLevel, 'gateway').info(
    { port },
    `listening on http://localhost:${port} (${auth}); web client at /, API docs at /api/docs`,
  );
}

main().catch((error: unknown) => {
  // Configuration errors name the variable; nothing else is worth a stack trace at start-up.
  console.error(`[gateway] could not start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
