import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  controlChannel,
  type BatchView,
  type ControlMessage,
  type CouncilResult,
  type DeliberationView,
} from '@conclave/contracts';
import { parse } from 'csv-parse/sync';
import IORedis from 'ioredis';
import { TestStack } from './support/harness';
import { sleep } from './support/wait';

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

/** A CLI still running: its output so far (stderr, or everything the terminal showed), with times. */
interface Running {
  child: ChildProcess;
  output: () => string;
  /** When the output first contained `text` (ms since the start), or null. */
  firstSeen: (text: string) => number | null;
  waitFor: (pattern: RegExp | string, timeoutMs?: number) => Promise<void>;
  exit: Promise<Run>;
}

const shellQuote = (arg: string): string => `'${arg.replace(/'/g, `'\\''`)}'`;

/**
 * Starts `bin/conclave.js`: with pipes (stdin and stderr not terminals), or with `tty`, under a
 * real pseudo-terminal (util-linux `script`), where Ctrl-C is typed as `\x03` on its input.
 */
function startConclave(args: string[], options: { tty?: boolean } = {}): Running {
  const env: NodeJS.ProcessEnv = { ...process.env, TERM: 'dumb' };
  delete env.CONCLAVE_URL;
  delete env.CONCLAVE_API_KEY;
  // `exec`: script runs the command through $SHELL, and a shell left waiting in between (dash
  // stays) would take the terminal's Ctrl-C itself and end with 130 whatever the CLI did.
  const command = `exec ${[process.execPath, CLI, ...args].map(shellQuote).join(' ')}`;
  const child = options.tty
    ? spawn('script', ['-qfec', command, '/dev/null'], { cwd: ROOT, env: { ...env, SHELL: '/bin/sh' } })
    : spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env });
  const started = Date.now();
  const chunks: { text: string; at: number }[] = [];
  let stdout = '';
  let stderr = '';
  // A terminal ends lines with \r\n; compare text as the program wrote it.
  const seen = (text: string) => {
    chunks.push({ text: text.replace(/\r\n/g, '\n'), at: Date.now() - started });
  };
  const output = () => chunks.map((c) => c.text).join('');
  child.stdout?.on('data', (data: Buffer) => {
    stdout += String(data);
    if (options.tty) seen(String(data));
  });
  child.stderr?.on('data', (data: Buffer) => {
    stderr += String(data);
    if (!options.tty) seen(String(data));
  });
  const exit = new Promise<Run>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout: stdout.replace(/\r\n/g, '\n'), stderr })),
  );
  const firstSeen = (text: string): number | null => {
    let sofar = '';
    for (const chunk of chunks) {
      sofar += chunk.text;
      if (sofar.includes(text)) return chunk.at;
    }
    return null;
  };
  const waitFor = async (pattern: RegExp | string, timeoutMs = 20_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    const found = () => (typeof pattern === 'string' ? output().includes(pattern) : pattern.test(output()));
    while (!found()) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`never saw ${String(pattern)} in:\n${output()}`);
      await sleep(25);
    }
  };
  return { child, output, firstSeen, waitFor, exit };
}

const messageIdIn = (output: string): string => {
  const id = /deliberation (\S+) \(conversation /.exec(output)?.[1];
  if (!id) throw new Error(`no deliberation id in:\n${output}`);
  return id;
};

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

  describe('while a deliberation runs', () => {
    const target = () => ['--url', stack.baseUrl, '--key', key];
    /** Every deliberation a gateway asked workers to send live pieces of (`watch`). */
    const watched = new Set<string>();
    let redis: IORedis;
    beforeAll(async () => {
      redis = new IORedis(stack.config.redisUrl);
      redis.on('message', (_channel: string, text: string) => {
        const message = JSON.parse(text) as ControlMessage;
        if (message.type === 'watch') watched.add(message.messageId);
      });
      await redis.subscribe(controlChannel(stack.config.redisPrefix));
    });
    afterAll(() => redis.disconnect());

    const viewOf = async (messageId: string) => {
      const view = await stack.api<DeliberationView<CouncilResult>>(
        'GET',
        `/api/deliberations/${messageId}`,
        {
          token: key,
        },
      );
      return view.body;
    };

    it('without a terminal, prints each answer whole as it lands; --quiet prints none', async () => {
      const roster = ['--models', 'sim/a:delay900@answer,sim/b:delay300@answer', '--chairman', 'sim/c'];
      const [run, quiet] = await Promise.all([
        cli('ask', 'Stream it?', ...roster),
        cli('ask', 'Quietly?', '--quiet', ...roster),
      ]);
      expectExit(run, 0);
      const { result } = await viewOf(messageIdIn(run.stderr));
      expect(run.stderr.includes('\x1b')).toBe(false);
      // each answer in one piece, under its header, then its progress line
      for (const answer of result.stage1)
        expect(run.stderr).toContain(
          `── ${answer.model} · stage1\n${answer.response}\n[stage1] ${answer.model} succeeded (`,
        );
      for (const ranking of result.stage2)
        expect(run.stderr).toContain(`── ${ranking.model} · stage2\n${ranking.ranking}\n`);
      expect(run.stderr).toContain(`── sim/c · stage3\n${result.stage3.response}\n`);
      expect(run.stdout).toBe(`${result.stage3.response}\n`);

      expectExit(quiet, 0);
      expect(quiet.stderr).not.toContain('── ');
      expect(quiet.stderr).toMatch(/\[stage1\] sim\/a:delay900@answer succeeded \(\d+ ms\)/);
      expect(quiet.stdout).toMatch(/^\[simulated synthesis by sim\/c\]/);
      // neither asked for live pieces: plain output and --quiet print no partial text
      expect(watched.has(messageIdIn(run.stderr))).toBe(false);
      expect(watched.has(messageIdIn(quiet.stderr))).toBe(false);
    }, 60_000);

    it('cancels the deliberation on Ctrl-C when stdin is not a terminal', async () => {
      const running = startConclave([
        'ask',
        'Stop me?',
        '--models',
        'sim/a:delay8000@answer,sim/b:delay8000@answer',
        ...target(),
      ]);
      await running.waitFor(/\[stage1\] sim\/b:delay8000@answer started/);
      running.child.kill('SIGINT');
      const run = await running.exit;
      expectExit(run, 3);
      const messageId = messageIdIn(run.stderr);
      expect(run.stderr).toContain(
        `interrupted: cancelling deliberation ${messageId} (no terminal to ask on`,
      );
      expect(run.stderr).toContain(`deliberation ${messageId} cancelled: Cancelled by the user.`);
      expect(run.stdout).toBe('');
      expect(await viewOf(messageId)).toMatchObject({ status: 'cancelled' });
    }, 30_000);

    it('a stop keeps the finished answers and says who was cut (issue 32)', async () => {
      const running = startConclave([
        'ask',
        'Keep what finished?',
        '--models',
        'sim/a,sim/b:delay8000@answer',
        ...target(),
      ]);
      await running.waitFor(/\[stage1\] sim\/a succeeded/);
      running.child.kill('SIGINT');
      const run = await running.exit;
      expectExit(run, 3);
      expect(run.stderr).toContain(
        'degraded: 1 of 2 answered — sim/b:delay8000@answer: cancelled: the deliberation was stopped',
      );
      expect(run.stderr).toContain(
        'kept 1 finished answer of the unfinished stage stage1 (not a final answer):\n--- sim/a (stage1) ---\n[simulated answer]',
      );
      expect(run.stdout).toBe('');
    }, 30_000);

    it('a degraded council names the failed member before the answer (issue 32)', async () => {
      const run = await cli('ask', 'Who is missing?', '--models', 'sim/athena,sim/x:fail,sim/y', '--quiet');
      expectExit(run, 0);
      expect(run.stderr).toContain(
        'degraded: 2 of 3 answered — sim/x:fail: HTTP 400 from the simulated provider: simulated failure',
      );
      expect(run.stdout).toMatch(/^\[simulated synthesis by /);
    }, 30_000);

    it('on a terminal, streams each answer as the model writes it', async () => {
      const running = startConclave(
        [
          'ask',
          'Write it live?',
          '--models',
          'sim/a:delay2500@answer,sim/b:delay300@answer',
          '--chairman',
          'sim/c',
          ...target(),
        ],
        { tty: true },
      );
      const run = await running.exit;
      expectExit(run, 0);
      const messageId = messageIdIn(running.output());
      const { result } = await viewOf(messageId);
      const slow = result.stage1.find((a) => a.model === 'sim/a:delay2500@answer');
      if (!slow) throw new Error('no answer from sim/a');
      // its text grew on screen over its 2.5 s: its beginning showed well before its end
      const beginning = running.firstSeen(`── ${slow.model} · stage1\n${slow.response.slice(0, 12)}`);
      const whole = running.firstSeen(`── ${slow.model} · stage1\n${slow.response}\n`);
      expect(beginning).not.toBeNull();
      expect(whole).not.toBeNull();
      expect((whole ?? 0) - (beginning ?? 0)).toBeGreaterThan(800);
      expect(watched.has(messageId)).toBe(true);
      expect(running.output()).toContain(`${result.stage3.response}\n`);
    }, 60_000);

    it('on a terminal, Ctrl-C asks: y cancels the deliberation, anything else leaves it running', async () => {
      const ask = (question: string) =>
        startConclave(['ask', question, '--models', 'sim/a:delay8000,sim/b:delay8000', ...target()], {
          tty: true,
        });
      const [yes, no] = [ask('Cancel me?'), ask('Leave me?')];
      for (const [running, answer] of [
        [yes, 'y\r'],
        [no, '\r'],
      ] as const) {
        await running.waitFor(/\[stage1\] sim\/b:delay8000 started/);
        running.child.stdin?.write('\x03');
        await running.waitFor('Cancel the deliberation on the server? [y/N] ');
        running.child.stdin?.write(answer);
      }
      const [cancelled, left] = await Promise.all([yes.exit, no.exit]);
      expectExit(cancelled, 3);
      const cancelledId = messageIdIn(yes.output());
      expect(yes.output()).toContain(`deliberation ${cancelledId} cancelled: Cancelled by the user.`);
      expect(await viewOf(cancelledId)).toMatchObject({ status: 'cancelled' });

      expectExit(left, 130);
      const leftId = messageIdIn(no.output());
      expect(no.output()).toContain(
        `left deliberation ${leftId} running on the server; see it at ${stack.baseUrl}/#/m/${leftId}`,
      );
      expect(await viewOf(leftId)).toMatchObject({ status: 'running' });
      await stack.api('POST', `/api/deliberations/${leftId}/cancel`, { token: key });
    }, 60_000);
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
      'index,message_id,conversation_id,mode,status,error,attempt,question,content,original_question,answer,headline,result_url,degraded,partial,key,reference',
    );
    const rows = parse(csv, { columns: true }) as Record<string, string>[];
    expect(rows).toHaveLength(5);
    expect(rows.map((row) => [row.index, row.mode, row.status, row.question, row.content])).toEqual(
      items.map((item, i) => [String(i), 'jury', 'complete', item.question, item.modeConfig.content]),
    );
    expectExit(status, 0);
    expect(JSON.parse(status.stdout)).toMatchObject({ batchId, status: 'complete', total: 5, complete: 5 });

    // Finished: deleted with its items; a second delete finds nothing.
    const deleted = await cli('batch', 'delete', batchId);
    expectExit(deleted, 0);
    expect(deleted.stdout).toBe(`deleted batch ${batchId}: its items, their deliberations and events\n`);
    expect((await stack.api('GET', `/api/batches/${batchId}`, { token: key })).status).toBe(404);
    const again = await cli('batch', 'delete', batchId);
    expectExit(again, 1);
    expect(again.stderr).toMatch(/^error: batch \S+ not found$/m);
  });

  it("refuses to delete a running batch with the server's reason (exit 1), and deletes it once cancelled", async () => {
    const file = path.join(dir, 'slow.jsonl');
    await writeFile(file, `${JSON.stringify({ question: 'Slow one?' })}\n`);
    const defaults = { councilModels: ['sim/slow:delay60000', 'sim/b'], chairmanModel: 'sim/c' };
    const submitted = await cli(
      'batch',
      'submit',
      file,
      '--mode',
      'council',
      '--defaults',
      JSON.stringify(defaults),
    );
    expectExit(submitted, 0);
    const batchId = submitted.stdout.trim();
    const refused = await cli('batch', 'delete', batchId);
    expectExit(refused, 1);
    expect(refused.stderr).toMatch(/^error: batch \S+ is (queued|running): cancel it first/m);
    expect((await stack.api('GET', `/api/batches/${batchId}`, { token: key })).status).toBe(200);
    expectExit(await cli('batch', 'cancel', batchId), 0);
    const deadline = Date.now() + 30_000;
    let deleted = await cli('batch', 'delete', batchId);
    while (deleted.code !== 0 && Date.now() < deadline) {
      await sleep(300);
      deleted = await cli('batch', 'delete', batchId);
    }
    expectExit(deleted, 0);
  }, 60_000);

  it('refuses an invalid request with exit 1, naming the field', async () => {
    const run = await cli('ask', 'Evaluate this', '--mode', 'jury');
    expectExit(run, 1);
    expect(run.stderr).toMatch(/^error: /);
    expect(run.stderr).toMatch(/^ {2}modeConfig\.content: /m);
    expect(run.stdout).toBe('');
  });

  it('grades a deliberation with --expected and --grader: the final verdict and ✓ / ✗ per answer (issue 37)', async () => {
    const run = await cli(
      'ask',
      'What is 6 times 7?',
      '--models',
      'sim/a:acc100,sim/b:acc0',
      '--chairman',
      'sim/chair:keep:acc100',
      '--expected',
      '42',
      '--grader',
      'numeric',
    );
    expectExit(run, 0);
    const [answer, graded] = run.stdout.split("\ngraded: the panel's final answer is ");
    expect(answer).toMatch(/FINAL ANSWER: 42\n$/);
    const lines = graded.trimEnd().split('\n');
    expect(lines[0]).toBe('correct ✓');
    expect(lines[1]).toMatch(
      /^ {2}final ✓ correct "42": chairman sim\/chair:keep:acc100 \[stage3\] \(read 42/,
    );
    expect(lines[2]).toBe('  answers (3):');
    expect(lines.slice(3).sort()).toEqual([
      expect.stringMatching(/^ {4}✓ correct "42": chairman sim\/chair:keep:acc100 \[stage3\]/),
      expect.stringMatching(/^ {4}✓ correct "42": respondent sim\/a:acc100 \[stage1\]/),
      expect.stringMatching(
        /^ {4}✗ incorrect "\d+": respondent sim\/b:acc0 \[stage1\] \(read .*off by \d+\)$/,
      ),
    ]);

    // A JSON grader, and a wrong one refused by the server naming the field.
    const tolerant = await cli(
      'ask',
      'What is 6 times 7?',
      '--models',
      'sim/a:acc0,sim/b:acc0',
      '--expected',
      '42',
      '--grader',
      '{"type":"numeric","absoluteTolerance":1000}',
    );
    expectExit(tolerant, 0);
    expect(tolerant.stdout).toContain("graded: the panel's final answer is correct ✓");
    const bad = await cli('ask', 'What is 6 times 7?', '--expected', 'forty-two', '--grader', 'numeric');
    expectExit(bad, 1);
    expect(bad.stderr).toMatch(/^ {2}expected: for a numeric grader, expected must be a number/m);
    expect(bad.stdout).toBe('');
    // Without --expected: the answer alone, as before.
    const plain = await cli('ask', 'What is 6 times 7?', '--models', 'sim/a:acc100,sim/b');
    expectExit(plain, 0);
    expect(plain.stdout).not.toContain('graded:');
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
