import type { BatchAccepted, BatchResultLine, BatchView } from '@conclave/contracts';
import { parse } from 'csv-parse/sync';
import type { Socket } from 'socket.io-client';
import { TestStack } from './support/harness';

const JURORS = { jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'], foremanModel: 'sim/foreman' };

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

interface Asked {
  question: string;
  content: string | null;
  originalQuestion: string | null;
}

/** Issue 20 point 8: an export names each item's question, and a jury item's content, apart. */
describe('batch exports: the question and the jury content in columns of their own', () => {
  const stack = new TestStack({ WORKER_CONCURRENCY: '8' });
  let socket: Socket;
  beforeAll(async () => {
    await stack.start();
    socket = await stack.connect();
  }, 60_000);
  afterAll(() => stack.stop());

  const submit = async (body: unknown): Promise<string> => {
    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', { body });
    expect(accepted.status).toBe(202);
    return accepted.body.batchId;
  };
  const upload = async (csv: string, query: string): Promise<string> => {
    const accepted = await stack.api<BatchAccepted>('POST', `/api/batches?${query}`, {
      raw: csv,
      headers: { 'content-type': 'text/csv' },
    });
    expect(accepted.status).toBe(202);
    return accepted.body.batchId;
  };

  /** Both exports of a finished batch: JSONL lines, and CSV rows by column name. */
  const exports = async (batchId: string) => {
    await batchComplete(socket, batchId);
    const jsonl = await fetch(`${stack.baseUrl}/api/batches/${batchId}/results?format=jsonl`);
    const csv = await fetch(`${stack.baseUrl}/api/batches/${batchId}/results?format=csv`);
    expect([jsonl.status, csv.status]).toEqual([200, 200]);
    return {
      lines: (await jsonl.text())
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as BatchResultLine),
      rows: parse(await csv.text(), { columns: true }) as Record<string, string>[],
    };
  };

  const expectAsked = async (batchId: string, asked: Asked[], mode: string) => {
    const { lines, rows } = await exports(batchId);
    expect(lines.map((l) => [l.mode, l.status])).toEqual(asked.map(() => [mode, 'complete']));
    expect(
      lines.map((l) => ({ question: l.question, content: l.content, originalQuestion: l.originalQuestion })),
    ).toEqual(asked);
    expect(
      rows.map((r) => ({ question: r.question, content: r.content, original_question: r.original_question })),
    ).toEqual(
      asked.map((a) => ({
        question: a.question,
        content: a.content ?? '',
        original_question: a.originalQuestion ?? '',
      })),
    );
    // the answer is still where it was, after the new columns
    for (const [i, row] of rows.entries()) {
      expect(row.answer).toBe(lines[i].answer ?? '');
      expect(row.result_url).toBe(lines[i].resultUrl);
    }
    return lines;
  };

  it('a jury batch (JSON): the question as submitted, the content and the original question apart', async () => {
    const asked: Asked[] = [
      {
        question: 'Is this explanation of the sky accurate?',
        content: 'Because of Rayleigh scattering of sunlight.',
        originalQuestion: 'Why is the sky blue?',
      },
      {
        question: 'Review this answer',
        content: 'Rivers carry dissolved minerals into it,\nand "evaporation" leaves them behind.',
        originalQuestion: null,
      },
      // a question that happens to be the content itself
      { question: 'Same text', content: 'Same text', originalQuestion: null },
    ];
    const batchId = await submit({
      defaults: { mode: 'jury', modeConfig: JURORS },
      items: asked.map((a) => ({
        question: a.question,
        modeConfig: {
          content: a.content,
          ...(a.originalQuestion ? { originalQuestion: a.originalQuestion } : {}),
        },
      })),
    });
    const lines = await expectAsked(batchId, asked, 'jury');
    for (const line of lines) expect(line.headline).toMatchObject({ majorityVerdict: expect.any(String) });

    // What is stored for the conversation is unchanged: the user's message is the content.
    const conversation = await stack.api<{ messages: { role: string; content: string }[] }>(
      'GET',
      `/api/conversations/${lines[0].conversationId}`,
    );
    expect(conversation.body.messages.find((m) => m.role === 'user')?.content).toBe(asked[0].content);
  }, 90_000);

  it('a jury batch uploaded as CSV gives back its question, content and originalQuestion columns', async () => {
    const asked: Asked[] = [
      {
        question: 'Evaluate, please',
        content: 'Water boils at 100 °C at sea level.',
        originalQuestion: 'When does water boil?',
      },
      { question: 'Second one', content: 'Line one\nline two, with "quotes"', originalQuestion: null },
    ];
    const cell = (value: string | null) => `"${(value ?? '').replace(/"/g, '""')}"`;
    const csv = [
      'question,content,originalQuestion',
      ...asked.map((a) => [a.question, a.content, a.originalQuestion].map(cell).join(',')),
    ].join('\n');
    const batchId = await upload(
      csv,
      `mode=jury&defaults=${encodeURIComponent(JSON.stringify({ modeConfig: JURORS }))}`,
    );
    await expectAsked(batchId, asked, 'jury');
  }, 90_000);

  it('a council batch: the question, and no content', async () => {
    const asked: Asked[] = [
      { question: 'Is a monorepo right for a small team?', content: null, originalQuestion: null },
      { question: 'Which database should we start with?', content: null, originalQuestion: null },
    ];
    const batchId = await submit({
      defaults: { mode: 'council' },
      items: asked.map((a) => ({ question: a.question })),
    });
    const lines = await expectAsked(batchId, asked, 'council');
    for (const line of lines) expect(line.answer).toEqual(expect.any(String));
  }, 90_000);
});
