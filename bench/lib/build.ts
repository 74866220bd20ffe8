import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');

/** How the benchmark runs gateway and worker processes. */
export type Runtime =
  | { kind: 'ts-node' }
  /** Compiled JavaScript, as `npm run prod:gateway` / `prod:worker` run it (no TypeScript in memory). */
  | { kind: 'compiled'; dir: string; gateway: string; worker: string };

/**
 * Compiles the apps and libraries as `npm run build` does (tsc -p tsconfig.build.json, then
 * tsc-alias), into a temporary directory instead of dist/, so the repository is left alone.
 */
export async function compile(): Promise<Runtime & { kind: 'compiled' }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'conclave-bench-build-'));
  const bin = (name: string) => path.join(ROOT, 'node_modules', '.bin', name);
  let typeErrors = '';
  try {
    await run(bin('tsc'), ['-p', 'tsconfig.build.json', '--outDir', dir], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    // tsc still emits when a file has type errors (noEmitOnError is off); what matters is the output.
    typeErrors = String((error as { stdout?: string }).stdout ?? error).slice(0, 2000);
  }
  await run(bin('tsc-alias'), ['-p', 'tsconfig.build.json', '--outDir', dir], { cwd: ROOT });
  const gateway = path.join(dir, 'apps/gateway/src/main.js');
  const worker = path.join(dir, 'apps/worker/src/main.js');
  if (!existsSync(gateway) || !existsSync(worker)) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`compiling the apps produced no entry points${typeErrors ? `:\n${typeErrors}` : ''}`);
  }
  return { kind: 'compiled', dir, gateway, worker };
}

export async function removeBuild(runtime: Runtime): Promise<void> {
  if (runtime.kind === 'compiled') await rm(runtime.dir, { recursive: true, force: true });
}
