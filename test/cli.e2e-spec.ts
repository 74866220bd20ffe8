import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { BatchView } from '@conclave/contracts';
import { parse } from 'csv-parse/sync';
import { TestStack } from './support/harness';

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'bin/conclave.js');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `bin/conclave.js` as a user would, without the developer's CONCLAVE_* settings. */
function conclave(args: string[], timeoutMs = 30_000): Promise<Run> {
  const env = { ...process.env };
  delete env.CONCLAVE_URL;
  delete env.CONCLAVE_API_KEY;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: ROOT, env, timeout: timeoutMs },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Compares exit codes, showing the output when they differ. */
function expectExit(run: Run, code: number): void {
  if (run.code !== code)
    throw new Error(`expected exit ${code}, got ${run.code}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`);
}

describe('the conclave CLI', () => {
  const stack = new TestStack({ AUTH_MODE: 'apikey' });
  let key = '';
  let dir = '';
  const cli = (...args: string[]) => conclave([...args, '--url', stack.baseUrl, '--key', key]);

  beforeAll(async () => {
    await stack.start();
    key = await stack.createUser('cli');
    dir = await mkdtemp(path.join(os.tmpdir(), 'conclave-cli-'));
  }, 60_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await stack.stop();
  });

  it('asks a council question, shows its progress and prints the synthesis', async () => {
    const run = await cli(
      'ask',
      'Is a monorepo right for us?',
      '--models',
      'sim/a,sim/b',
      '--chairman',
      'sim/c',
    );
    expectExit(run, 0);
    expect(run.stdout).toContain('[simulated synthesis by sim/c]');
    expect(run.stderr).toMatch(/\[stage1\] sim\/a succeeded \(\d+ ms\)/);
    expect(run.stderr).toContain('[stage2] complete: ');
    expect(run.stderr).toContain('[stage3] complete: synthesis by sim/c');
  });

  it('submits a JSONL batch, watches it finish, then fetches its results and status', async () => {
    const file = path.join(dir, 'jury.jsonl');
    const items = Array.from({ length: 5 }, (_, i) => ({
      question: `Evaluate draft ${i}`,
      modeConfig: { content: `Draft ${i}: the sky is blue because of Rayleigh scattering.` },
    }));
    await writeFile(file, items.map((item) => JSON.stringify(item)).join('\n') + '\n');
    const defaults = { modeConfig: { jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'], foremanModel: 'sim/f' } };

    const submitted = await cli(
      'batch',
      'submit',
      file,
      '--mode',
      'jury',
      '--defaults',
      JSON.stringify(defaults),
      '--watch',
    );
    expectExit(submitted, 0);
    const batchId = submitted.stdout.trim();
    expect(batchId).toMatch(UUID);
    expect(submitted.stderr).toMatch(/batch \S+ complete in \S+: 5 items, 5 complete, 0 failed, 0 cancelled/);
    const stored = await stack.api<BatchView>('GET', `/api/batches/${batchId}`, { token: key });
    expect(stored).toMatchObject({ status: 200, body: { batchId, total: 5 } });

    const csvFile = path.join(dir, 'results.csv');
    const [results, status] = await Promise.all([
      cli('batch', 'results', batchId, '--format', 'csv', '--out', csvFile),
      cli('batch', 'status', batchId, '--json'),
    ]);
    expectExit(results, 0);
    const csv = await readFile(csvFile, 'utf8');
    expect(csv.split('\n')[0]).toBe(
      'index,message_id,conversation_id,mode,status,error,question,answer,headline,result_url',
    );
    const rows = parse(csv, { columns: true }) as Record<string, string>[];
    expect(rows).toHaveLength(5);
    expect(rows.map((row) => [row.index, row.mode, row.status])).toEqual(
      items.map((_, i) => [String(i), 'jury', 'complete']),
    );
    expectExit(status, 0);
    expect(JSON.parse(status.stdout)).toMatchObject({ batchId, status: 'complete', total: 5, complete: 5 });
  });

  it('refuses an invalid request with exit 1, naming the field', async () => {
    const run = await cli('ask', 'Evaluate this', '--mode', 'jury');
    expectExit(run, 1);
    expect(run.stderr).toMatch(/^error: /);
    expect(run.stderr).toMatch(/^ {2}modeConfig\.content: /m);
    expect(run.stdout).toBe('');
  });

  it('says clearly that a wrong API key was refused, over Socket.IO and HTTP', async () => {
    const wrong = ['--url', stack.baseUrl, '--key', 'ck_wrong'];
    const [ask, list] = await Promise.all([
      conclave(['ask', 'q', ...wrong]),
      conclave(['batch', 'list', ...wrong]),
    ]);
    for (const run of [ask, list]) {
      expectExit(run, 1);
      expect(run.stderr).toBe(
        'error: the API key was refused: give a valid key with --key or CONCLAVE_API_KEY\n',
      );
    }
  });

  it('reports an unknown batch as not found', async () => {
    const run = await cli('batch', 'cancel', randomUUID());
    expectExit(run, 1);
    expect(run.stderr).toMatch(/^error: batch \S+ not found$/m);
  });

  it('prints the usage for a mistaken command line (exit 2) and says when the server is down', async () => {
    const [unknownCommand, unknownFlag, down] = await Promise.all([
      cli('frobnicate'),
      cli('batch', 'list', '--verbose'),
      conclave(['batch', 'list', '--url', 'http://127.0.0.1:1']),
    ]);
    expectExit(unknownCommand, 2);
    expect(unknownCommand.stderr).toContain('unknown command "frobnicate"');
    expect(unknownCommand.stderr).toContain('Usage: conclave');
    expectExit(unknownFlag, 2);
    expect(unknownFlag.stderr).toContain('unknown option --verbose');
    expectExit(down, 1);
    expect(down.stderr).toBe('error: cannot reach Conclave at http://127.0.0.1:1 (is it running?)\n');
  });
});
