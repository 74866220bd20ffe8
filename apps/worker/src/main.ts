import 'reflect-metadata';
import { loadConfig } from '@conclave/config';
import { startWorker } from './worker';

async function main(): Promise<void> {
  const worker = await startWorker(loadConfig());
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`[worker] ${signal}: finishing active jobs, then exiting`);
    worker.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  console.error(`[worker] could not start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
