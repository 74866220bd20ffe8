import type { BatchView, DeliveredEvent } from '@conclave/contracts';
import { parseInvocation } from './args';
import { buildRequest } from './ask';
import { uploadFor } from './batch';
import { formatDuration, progressLine, ProgressReporter } from './batch-view';
import { CliError, formatError, UsageError } from './errors';
import { describeEvent } from './event-lines';

describe('the conclave CLI, without a server', () => {
  describe('command lines', () => {
    it('takes global options anywhere and the environment as fallback', () => {
      expect(
        parseInvocation(['batch', 'status', 'b1', '--url', 'http://h:1/', '--json'], {
          CONCLAVE_API_KEY: 'k',
        }),
      ).toMatchObject({
        command: 'batch status',
        args: ['b1'],
        flags: { json: true },
        target: { url: 'http://h:1', key: 'k' },
      });
      expect(parseInvocation(['ask', 'q'], {})).toMatchObject({
        target: { url: 'http://localhost:3000', key: undefined },
      });
      expect(parseInvocation(['ask', '--help'], {})).toEqual({ command: 'help' });
      expect(parseInvocation(['ask', 'q', '-q'], {})).toMatchObject({ flags: { quiet: true } });
      expect(() => parseInvocation(['batch', 'list', '--quiet'], {})).toThrow('batch list takes no --quiet');
    });

    it('batch results takes --long (the long-format export); no other command does', () => {
      expect(parseInvocation(['batch', 'results', 'b1', '--long', '--format', 'csv'], {})).toMatchObject({
        command: 'batch results',
        args: ['b1'],
        flags: { long: true, format: 'csv' },
      });
      expect(() => parseInvocation(['batch', 'report', 'b1', '--long'], {})).toThrow(
        'batch report takes no --long',
      );
    });

    it.each([
      [['frob'], 'unknown command "frob"'],
      [['batch', 'frob'], 'unknown command "batch frob"'],
      [['ask', 'q', '--nope'], 'unknown option --nope'],
      [['ask', 'q', '--format', 'csv'], 'ask takes no --format'],
      [['batch', 'status'], 'usage: conclave batch status ID'],
      [['batch', 'list', 'extra'], 'usage: conclave batch list'],
      [[], 'missing command'],
    ])('refuses %j', (argv, message) => {
      expect(() => parseInvocation(argv, {})).toThrow(UsageError);
      expect(() => parseInvocation(argv, {})).toThrow(message);
    });
  });

  describe('ask requests', () => {
    it('sends a follow-up with its conversation and no mode, so the conversation keeps its own', () => {
      expect(buildRequest('q', { conversationId: 'c-1' })).toEqual({ question: 'q', conversationId: 'c-1' });
      expect(parseInvocation(['ask', 'q', '--conversation', 'c-1'], {})).toMatchObject({
        command: 'ask',
        flags: { conversation: 'c-1' },
      });
    });

    it('puts each mode roster where that mode reads it', () => {
      const models = ['sim/a', 'sim/b', 'sim/c'];
      expect(buildRequest('q', { models, chairman: 'sim/x' })).toEqual({
        question: 'q',
        councilModels: models,
        chairmanModel: 'sim/x',
      });
      expect(buildRequest('q', { mode: 'vote', models, chairman: 'sim/x' }).modeConfig).toEqual({
        models,
        chairmanModel: 'sim/x',
      });
      expect(buildRequest('q', { mode: 'debate', models }).modeConfig).toEqual({ models });
      expect(
        buildRequest('q', {
          mode: 'jury',
          models,
          chairman: 'sim/f',
          content: 'text',
          originalQuestion: 'why?',
          config: { timeoutMs: 30_000 },
        }),
      ).toEqual({
        question: 'q',
        mode: 'jury',
        modeConfig: {
          jurorModels: models,
          foremanModel: 'sim/f',
          content: 'text',
          originalQuestion: 'why?',
          timeoutMs: 30_000,
        },
      });
      expect(buildRequest('q', { mode: 'delphi', models, chairman: 'sim/f' }).modeConfig).toEqual({
        panelistModels: models,
        facilitatorModel: 'sim/f',
      });
    });

    it('refuses flags the mode has no use for', () => {
      expect(() => buildRequest('q', { mode: 'debate', chairman: 'sim/x' })).toThrow(UsageError);
      expect(() => buildRequest('q', { mode: 'council', content: 'text' })).toThrow(UsageError);
    });
  });

  describe('batch uploads', () => {
    const settings = { mode: 'jury', defaults: { modeConfig: { foremanModel: 'sim/f' } }, titles: true };

    it('sends CSV and JSONL as they are, with the settings as query parameters', () => {
      expect(uploadFor('items.CSV', 'question\nq', { ...settings, concurrency: 3 })).toEqual({
        body: 'question\nq',
        contentType: 'text/csv',
        query: {
          name: undefined,
          concurrency: '3',
          generateTitles: 'true',
          defaults: '{"modeConfig":{"foremanModel":"sim/f"}}',
          mode: 'jury',
        },
      });
      expect(uploadFor('a.ndjson', '{}', { titles: false }).contentType).toBe('application/x-ndjson');
      expect(() => uploadFor('a.txt', '', { titles: false })).toThrow(UsageError);
    });

    it('overrides a JSON envelope with the flags', () => {
      const envelope = { name: 'old', concurrency: 1, defaults: { councilModels: ['sim/a'] }, items: [{}] };
      const upload = uploadFor('b.json', JSON.stringify(envelope), { ...settings, name: 'new' });
      expect(JSON.parse(upload.body)).toEqual({
        name: 'new',
        concurrency: 1,
        generateTitles: true,
        defaults: { councilModels: ['sim/a'], modeConfig: { foremanModel: 'sim/f' }, mode: 'jury' },
        items: [{}],
      });
      expect(() => uploadFor('b.json', '[1]', { titles: false })).toThrow(CliError);
    });
  });

  describe('output', () => {
    const view: BatchView = {
      batchId: 'b1',
      name: null,
      status: 'running',
      concurrency: 2,
      createdAt: '2026-01-01T00:00:00.000Z',
      startedAt: '2026-01-01T00:00:00.000Z',
      finishedAt: null,
      usage: { promptTokens: 0, completionTokens: 0, costUsd: 0 },
      etaSeconds: 75,
      total: 10,
      queued: 4,
      running: 2,
      complete: 3,
      failed: 1,
      cancelled: 0,
      maxCostUsd: null,
      retriedItems: 0,
    };

    it('draws a progress line with counts and ETA', () => {
      expect(progressLine(view)).toBe(
        '[##########..............]  40% 4/10 · 3 complete · 1 failed · 2 running · 4 queued · 0 cancelled · ETA 1m15s',
      );
      expect(formatDuration(3725)).toBe('1h02m');
    });

    it('redraws on a terminal, and prints at most every 2 s elsewhere', () => {
      const written: string[] = [];
      let now = 0;
      const plain = new ProgressReporter({ write: (text: string) => written.push(text) }, () => now);
      plain.update(view);
      now = 1_000;
      plain.update(view);
      now = 2_500;
      plain.update(view);
      expect(written).toHaveLength(2);
      const tty: string[] = [];
      new ProgressReporter({ isTTY: true, columns: 40, write: (text: string) => tty.push(text) }).update(
        view,
      );
      const [line] = tty;
      expect([line.slice(0, 1), line.length - 4, line.slice(-3)]).toEqual(['\r', 39, '\x1b[K']);
    });

    it('names every offending field, up to a limit', () => {
      const fields = Object.fromEntries(
        Array.from({ length: 25 }, (_, i) => [`items[${i}].question`, 'missing']),
      );
      const lines = formatError(new CliError('25 items are invalid', fields)).split('\n');
      expect(lines[0]).toBe('error: 25 items are invalid');
      expect(lines[1]).toBe('  items[0].question: missing');
      expect(lines).toHaveLength(22);
      expect(lines[21]).toBe('  … and 5 more');
    });

    it('describes events as progress lines', () => {
      const event = (type: string, payload: object) =>
        ({ type, messageId: 'm', seq: 1, at: '', ...payload }) as DeliveredEvent;
      expect(
        describeEvent(
          event('model_progress', {
            stage: 'stage1',
            participant: 'sim/a',
            state: 'succeeded',
            responseTimeMs: 12,
          }),
        ),
      ).toBe('[stage1] sim/a succeeded (12 ms)');
      expect(
        describeEvent(
          event('model_progress', { stage: 'round_2', participant: 3, state: 'failed', error: 'x' }),
        ),
      ).toBe('[round 2] #3 failed: x');
      expect(describeEvent(event('stage2_start', {}))).toBe('[stage2] started');
      expect(describeEvent(event('some_new_complete', {}))).toBe('[some_new] complete');
      expect(describeEvent(event('error', { message: 'boom' }))).toBeNull();
      expect(describeEvent(event('cancelled', { reason: 'Cancelled by the user.' }))).toBeNull();
      expect(describeEvent(event('resumed', { stage: 'round_2', reason: 'worker_lost', message: 'x' }))).toBe(
        '[round 2] resuming (the worker running it stopped)',
      );
    });
  });
});
