import 'reflect-metadata';
import { loadConfig } from '@conclave/config';
import { createGateway } from './app';

async function main(): Promise<void> {
  const config = loadConfig();
  const app = await createGateway(config);
  await app.listen(config.port, process.env.HOST ?? '0.0.0.0');
  const auth = config.authMode === 'none' ? 'single-user mode, no API key needed' : 'API keys required';
  console.log(`[gateway] listening on http://localhost:${config.port} (${auth}); API docs at /api/docs`);
}

main().catch((error: unknown) => {
  console.error(`[gateway] could not start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
