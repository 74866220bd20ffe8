import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { BatchAccepted, BatchComparison, BatchReport, BatchView } from '@conclave/contracts';
import { TestStack } from './support/harness';

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'bin/conclave.js');
const JURY = { jurorModels: ['sim/kind:good', 'sim/j2:fair', 'sim/j3:fair'], foremanModel: 'sim/foreman' };

/** Runs `bin/conclave.js` as a user would, without the developer's CONCLAVE_* settings. */
function conclave(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env };
  delete env.CONCLAVE_URL;
  delete env.CONCLAVE_API_KEY;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: ROOT, env, timeout: 30_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
      },
    );
  });
}

describe('conclave batch report / compare', () => {
  const stack = new TestStack({ WORKER_CONCURRENCY: '16' });
  let a = '';
  let b = '';
  let dir = '';

  async function batch(verdictOfItem1: 'fair' | 'good'): Promise<string> {
    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', {
      body: {
        defaults: { mode: 'jury', modeConfig: JURY },
        items: [0, 1, 2].map((i) => ({
          question: `q${i}`,
          key: `k${i}`,
          reference: 'REVISE',
          modeConfig: {
            content: `Answer ${i}`,
            ...(i === 1 && verdictOfItem1 === 'good'
              ? { jurorModels: ['sim/x:good', 'sim/y:good', 'sim/z:good'] }
              : {}),
          },
        })),
      },
    });
    const id = accepted.body.batchId;
    for (let view: BatchView; ; await new Promise((r) => setTimeout(r, 200))) {
      view = (await stack.api<BatchView>('GET', `/api/batches/${id}`)).body;
      if (view.status === 'complete') return id;
    }
  }

  beforeAll(async () => {
    await stack.start();
    [a, b] = [await batch('fair'), await batch('good')];
    dir = await mkdtemp(path.join(os.tmpdir(), 'conclave-report-'));
  }, 120_000);
  afterAll(async () => {
    await stack.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('prints a batch report as Markdown by default, or as JSON', async () => {
    const md = await conclave(['--url', stack.baseUrl, 'batch', 'report', a]);
    expect(md).toMatchObject({ code: 0, stderr: '' });
    expect(md.stdout).toContain(`Batch \`${a}\``);
    expect(md.stdout).toContain('## Jury');
    expect(md.stdout).toContain('### Agreement with the reference');

    const json = await conclave(['--url', stack.baseUrl, 'batch', 'report', a, '--format', 'json']);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as BatchReport;
    expect(report).toMatchObject({ batchId: a, modes: ['jury'], items: { complete: 3 } });
    expect(report.jury?.reference?.matching).toMatchObject({ count: 3, n: 3 });
    expect(json.stdout).toContain('\n  "batchId"');
  });

  it('compares two batches and writes to --out', async () => {
    const out = path.join(dir, 'compare.json');
    const run = await conclave([
      '--url',
      stack.baseUrl,
      'batch',
      'compare',
      a,
      b,
      '--format',
      'json',
      '--out',
      out,
    ]);
    expect(run).toMatchObject({ code: 0, stdout: '' });
    expect(run.stderr).toBe(`wrote ${out}\n`);
    const comparison = JSON.parse(await readFile(out, 'utf8')) as BatchComparison;
    expect(comparison).toMatchObject({ matchedBy: 'key', pairs: 3, flipped: { count: 1, n: 3 } });
    expect(comparison.flips[0]).toMatchObject({ outcomeA: 'REVISE', outcomeB: 'APPROVE', a: { key: 'k1' } });

    const md = await conclave(['--url', stack.baseUrl, 'batch', 'compare', a, b]);
    expect(md.code).toBe(0);
    expect(md.stdout).toContain('## Flipped outcomes');
  });

  it('says what is wrong: usage errors exit 2, API errors exit 1 with the server message', async () => {
    const usage = await conclave(['--url', stack.baseUrl, 'batch', 'compare', a]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('usage: conclave batch compare A B');
    const format = await conclave(['--url', stack.baseUrl, 'batch', 'report', a, '--format', 'csv']);
    expect(format.code).toBe(2);
    expect(format.stderr).toContain('--format must be md or json');
    const missing = await conclave([
      '--url',
      stack.baseUrl,
      'batch',
      'report',
      '00000000-0000-4000-8000-000000000000',
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('batch 00000000-0000-4000-8000-000000000000 not found');
    const self = await conclave(['--url', stack.baseUrl, 'batch', 'compare', a, 'nope']);
    expect(self.code).toBe(1);
    expect(self.stderr).toContain('batch nope not found');
  });
});
