import type { BatchAccepted, BatchResultLine, BatchView } from '@conclave/contracts';
import { parse } from 'csv-parse/sync';
import type { Socket } from 'socket.io-client';
import { TestStack } from './support/harness';

const JURORS = { jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'], foremanModel: 'sim/foreman' };

function waitForBatch(
  socket: Socket,
  batchId: string,
  timeoutMs = 120_000,
): Promise<{ progress: BatchView[]; done: BatchView }> {
  const progress: BatchView[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`batch not complete: ${JSON.stringify(progress.at(-1))}`)),
      timeoutMs,
    );
    socket.on('batch_progress', (view: BatchView) => {
      if (view.batchId === batchId) progress.push(view);
    });
    socket.on('batch_complete', (view: BatchView) => {
      if (view.batchId !== batchId) return;
      clearTimeout(timer);
      resolve({ progress, done: view });
    });
    void socket.emitWithAck('subscribe', { batchId });
  });
}

describe('batches', () => {
  const stack = new TestStack({ WORKER_CONCURRENCY: '32' });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const submit = (body: unknown, headers: Record<string, string> = {}) =>
    stack.api<BatchAccepted & { fields?: Record<string, string>; message?: string }>('POST', '/api/batches', {
      body,
      headers,
    });

  it('runs a 1 000-item jury batch; its export has one line per item matching the database', async () => {
    const items = Array.from({ length: 1000 }, (_, i) => ({
      question: `Answer ${i}`,
      modeConfig: {
        content: `Candidate answer number ${i}: water boils at ${90 + (i % 20)} degrees at sea level.`,
      },
    }));
    const started = Date.now();
    const accepted = await submit({
      name: 'thousand',
      defaults: { mode: 'jury', modeConfig: JURORS },
      items,
      concurrency: 100,
    });
    expect(accepted.status).toBe(202);
    expect(Date.now() - started).toBeLessThan(30_000);
    const socket = await stack.connect();
    const { progress, done } = await waitForBatch(socket, accepted.body.batchId, 300_000);
    expect(done).toMatchObject({
      status: 'complete',
      total: 1000,
      complete: 1000,
      failed: 0,
      queued: 0,
      running: 0,
      etaSeconds: 0,
    });
    expect(progress.length).toBeGreaterThan(0);

    const jsonl = await fetch(`${stack.baseUrl}/api/batches/${accepted.body.batchId}/results?format=jsonl`);
    expect(jsonl.headers.get('content-type')).toMatch(/ndjson/);
    const lines = (await jsonl.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as BatchResultLine);
    expect(lines).toHaveLength(1000);
    expect(lines.map((l) => l.index)).toEqual(items.map((_, i) => i));
    const stored: { id: string; batch_index: number; status: string; verdict: string }[] =
      await stack.db.query(
        `SELECT m.id, m.batch_index, m.status, s.parsed_data->>'majorityVerdict' AS verdict
       FROM messages m JOIN deliberation_stages s ON s.message_id = m.id AND s.stage_type = 'juror_summary'
       WHERE m.batch_id = $1 ORDER BY m.batch_index`,
        [accepted.body.batchId],
      );
    expect(stored).toHaveLength(1000);
    lines.forEach((line, i) => {
      expect(line).toMatchObject({
        messageId: stored[i].id,
        status: 'complete',
        mode: 'jury',
        resultUrl: `/api/deliberations/${stored[i].id}`,
      });
      expect(line.headline).toMatchObject({ majorityVerdict: stored[i].verdict });
      expect(line.question).toBe(items[i].question);
      expect(line.content).toBe(items[i].modeConfig.content);
    });

    const csv = await fetch(`${stack.baseUrl}/api/batches/${accepted.body.batchId}/results?format=csv`);
    const rows = parse(await csv.text(), { columns: true }) as Record<string, string>[];
    expect(rows).toHaveLength(1000);
    expect(rows[7]).toMatchObject({
      index: '7',
      message_id: stored[7].id,
      status: 'complete',
      question: 'Answer 7',
      content: items[7].modeConfig.content,
      original_question: '',
    });
  }, 400_000);

  it('rejects a batch with invalid items whole, naming every bad index, storing nothing', async () => {
    const before = await stack.db.query(
      'SELECT (SELECT COUNT(*)::int FROM batches) AS b, (SELECT COUNT(*)::int FROM messages) AS m',
    );
    const response = await submit({
      defaults: { mode: 'jury', modeConfig: JURORS },
      items: [
        { question: 'ok', modeConfig: { content: 'fine' } },
        { question: 'no content' },
        { question: 'ok', modeConfig: { content: 'fine' } },
        { question: '', modeConfig: { content: 'x', foremanModel: 'sim/j1' } },
        {
          question: 'x',
          modeConfig: { content: 'x' },
          conversationId: '11111111-1111-4111-8111-111111111111',
        },
      ],
    });
    expect(response.status).toBe(400);
    expect(response.body.message).toBe('3 of 5 items are invalid: items 1, 3, 4');
    expect(response.body.fields).toEqual({
      'items[1].modeConfig.content': 'Content to evaluate is required',
      'items[3].question': 'Content to evaluate is required',
      'items[3].modeConfig.foremanModel': 'Foreman model must not be one of the juror models',
      'items[4].conversationId': 'batch items start new conversations',
    });
    expect(
      await stack.db.query(
        'SELECT (SELECT COUNT(*)::int FROM batches) AS b, (SELECT COUNT(*)::int FROM messages) AS m',
      ),
    ).toEqual(before);
  });
});
