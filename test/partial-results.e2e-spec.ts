import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  BatchAccepted,
  BatchResultLine,
  BatchView,
  DeliberationView,
  PartialResult,
} from '@conclave/contracts';
import type { DeliberationOutcome } from '@conclave/outcomes';
import { parse } from 'csv-parse/sync';
import { TestStack } from './support/harness';
import { until } from './support/wait';

/**
 * Issue 32, points 2 and 3: a run stopped inside a stage keeps every answer that finished there,
 * in every form (REST, the stored events, MCP's structured result, text and transcript, the /v1
 * error, batch exports), marked partial with what was cut and why; and a run where a member failed
 * names it, near the top, in every output. Simulated models: `:delay60000@<kind>` keeps one member
 * of the stage in flight until the stop, the others finish at once.
 */

const SLOW = 'delay60000';
const USER_REASON = 'Cancelled by the user.';

interface StopCase {
  name: string;
  /** A preset's body (mode, roster), without its name. */
  preset: Record<string, unknown>;
  question: string;
  stage: string;
  /** The members of the stage that finish before the stop, and the one still running. */
  finished: string[];
  running: string;
}

const council = (models: string[], chairmanModel = 'sim/chair') => ({
  mode: 'council',
  councilModels: models,
  chairmanModel,
});
const vote = (models: string[]) => ({ mode: 'vote', modeConfig: { models, chairmanModel: 'sim/chair' } });
const debate = (models: string[]) => ({ mode: 'debate', modeConfig: { models } });
/** A jury preset holds no content: the question (the /v1 message, a batch item's) is the content evaluated. */
const jury = (jurorModels: string[], foremanModel = 'sim/fore') => ({
  mode: 'jury',
  modeConfig: { jurorModels, foremanModel },
});
const delphi = (panelistModels: string[], facilitatorModel = 'sim/fac') => ({
  mode: 'delphi',
  modeConfig: { panelistModels, facilitatorModel },
});

const CASES: StopCase[] = [
  {
    name: 'council-stage1',
    preset: council(['sim/athena', `sim/slow:${SLOW}@answer`]),
    question: 'Why keep finished work?',
    stage: 'stage1',
    finished: ['sim/athena'],
    running: `sim/slow:${SLOW}@answer`,
  },
  {
    name: 'council-stage2',
    preset: council(['sim/athena', `sim/hermes:${SLOW}@rank`]),
    question: 'Why keep rankings?',
    stage: 'stage2',
    finished: ['sim/athena'],
    running: `sim/hermes:${SLOW}@rank`,
  },
  {
    name: 'council-stage3',
    preset: council(['sim/athena', 'sim/hermes'], `sim/chair:${SLOW}@synthesis`),
    question: 'Why keep a synthesis?',
    stage: 'stage3',
    finished: [],
    running: `sim/chair:${SLOW}@synthesis`,
  },
  {
    name: 'vote-answer',
    preset: vote(['sim/a', 'sim/b', `sim/c:${SLOW}@answer`]),
    question: 'Which answer is best?',
    stage: 'answer',
    finished: ['sim/a', 'sim/b'],
    running: `sim/c:${SLOW}@answer`,
  },
  {
    name: 'vote-vote',
    preset: vote(['sim/a', 'sim/b', `sim/c:${SLOW}@vote`]),
    question: 'Which vote counts?',
    stage: 'vote',
    finished: ['sim/a', 'sim/b'],
    running: `sim/c:${SLOW}@vote`,
  },
  {
    name: 'jury-deliberation',
    preset: jury(['sim/j1', 'sim/j2', `sim/j3:${SLOW}@evaluation`]),
    question: 'Water boils at 100 degrees Celsius at sea level.',
    stage: 'deliberation',
    finished: ['sim/j1', 'sim/j2'],
    running: `sim/j3:${SLOW}@evaluation`,
  },
  {
    name: 'jury-verdict',
    preset: jury(['sim/j1', 'sim/j2', 'sim/j3'], `sim/fore:${SLOW}@foreman`),
    question: 'Water freezes at 0 degrees Celsius at sea level.',
    stage: 'verdict',
    finished: [],
    running: `sim/fore:${SLOW}@foreman`,
  },
  {
    name: 'debate-round1',
    preset: debate(['sim/a', 'sim/b', `sim/c:${SLOW}@answer`]),
    question: 'Tabs or spaces?',
    stage: 'round1',
    finished: ['sim/a', 'sim/b'],
    running: `sim/c:${SLOW}@answer`,
  },
  {
    name: 'debate-revision',
    preset: debate(['sim/a', 'sim/b', `sim/c:${SLOW}@revision`]),
    question: 'Tabs or spaces, revised?',
    stage: 'revision',
    finished: ['sim/a', 'sim/b'],
    running: `sim/c:${SLOW}@revision`,
  },
  {
    name: 'debate-vote',
    preset: debate(['sim/a', 'sim/b', `sim/c:${SLOW}@vote`]),
    question: 'Tabs or spaces, voted?',
    stage: 'vote',
    finished: ['sim/a', 'sim/b'],
    running: `sim/c:${SLOW}@vote`,
  },
  {
    name: 'delphi-classify',
    preset: delphi(['sim/p1', 'sim/p2', 'sim/p3'], `sim/fac:${SLOW}@classify`),
    question: 'How many piano tuners work in Chicago?',
    stage: 'classify',
    finished: [],
    running: `sim/fac:${SLOW}@classify`,
  },
  {
    name: 'delphi-round1',
    preset: delphi(['sim/p1', 'sim/p2', `sim/p3:${SLOW}@estimate`]),
    question: 'How many piano tuners work in Boston?',
    stage: 'round_1',
    finished: ['sim/p1', 'sim/p2'],
    running: `sim/p3:${SLOW}@estimate`,
  },
  {
    // A stubborn panelist keeps the panel from converging in round 1: a round 2 follows.
    name: 'delphi-round2',
    preset: delphi(['sim/p1', `sim/p2:${SLOW}@reestimate`, 'sim/p3:stubborn']),
    question: 'How many piano tuners work in Denver?',
    stage: 'round_2',
    finished: ['sim/p1', 'sim/p3:stubborn'],
    running: `sim/p2:${SLOW}@reestimate`,
  },
  {
    name: 'delphi-synthesis',
    preset: delphi(['sim/p1', 'sim/p2', 'sim/p3'], `sim/fac:${SLOW}@report`),
    question: 'How many piano tuners work in Austin?',
    stage: 'synthesis',
    finished: [],
    running: `sim/fac:${SLOW}@report`,
  },
];

type StoredEvent = { type: string; payload: Record<string, unknown> };

describe('partial and degraded runs in every output', () => {
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
    RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
    WORKER_CONCURRENCY: '16',
  });
  let key = '';
  let mcp: Client;

  beforeAll(async () => {
    await stack.start();
    key = await stack.createUser('alice');
    mcp = new Client({ name: 'conclave-partial-e2e', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      }),
    );
    await mcp.listTools();
  }, 60_000);
  afterAll(async () => {
    await mcp?.close();
    await stack.stop();
  });

  const savePreset = async (name: string, body: Record<string, unknown>) => {
    const saved = await stack.api('POST', '/api/presets', { token: key, body: { name, ...body } });
    expect([200, 201]).toContain(saved.status);
  };
  const view = async (messageId: string) =>
    (await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`, { token: key })).body;
  const eventsOf = async (messageId: string): Promise<StoredEvent[]> =>
    stack.db.query('SELECT type, payload FROM deliberation_events WHERE message_id = $1 ORDER BY seq', [
      messageId,
    ]);
  const progressOf = (events: StoredEvent[], stage: string, state: string) =>
    events.filter(
      (e) => e.type === 'model_progress' && e.payload.stage === stage && e.payload.state === state,
    );

  /** A streamed /v1 request: its deliberation's id as soon as the first chunk names it, then all it sent. */
  async function streamChat(model: string, question: string) {
    const response = await fetch(`${stack.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: question }] }),
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!/"id":"chatcmpl-[0-9a-f-]{36}"/.test(text)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended before naming its deliberation: ${text}`);
      text += decoder.decode(value, { stream: true });
    }
    const messageId = /"id":"chatcmpl-([0-9a-f-]{36})"/.exec(text)![1];
    const rest = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return text;
        text += decoder.decode(value, { stream: true });
      }
    })();
    return { messageId, rest };
  }

  /** The `data:` lines of an SSE text, parsed (the [DONE] line left out). */
  const dataLines = (text: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
      .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);

  const mcpOutcome = async (messageId: string) => {
    const result = await mcp.callTool({ name: 'get_deliberation', arguments: { messageId } });
    return {
      outcome: result.structuredContent as DeliberationOutcome,
      text: (result.content as { type: string; text?: string }[]).find((c) => c.type === 'text')?.text ?? '',
    };
  };
  const transcript = async (messageId: string) => {
    const read = await mcp.readResource({ uri: `conclave://deliberations/${messageId}` });
    return (read.contents[0] as { text: string }).text;
  };

  describe.each(CASES)('$name: stopped while $running still runs', (c) => {
    it('keeps every finished answer of the stage in REST, the events, MCP, the transcript and /v1', async () => {
      await savePreset(c.name, c.preset);
      const chat = await streamChat(`conclave/preset/${c.name}`, c.question);
      const { messageId } = chat;

      // Every finished member of the stage has reported its answer; the running one has started.
      const events = await until(async () => {
        const stored = await eventsOf(messageId);
        const done = progressOf(stored, c.stage, 'succeeded');
        const started = progressOf(stored, c.stage, 'started');
        return done.length === c.finished.length && started.length === c.finished.length + 1 && stored;
      }, `${c.name}: the stage's finished answers`);
      const cancelled = await stack.api('POST', `/api/deliberations/${messageId}/cancel`, { token: key });
      expect(cancelled.status).toBe(200);
      const streamed = await chat.rest;

      // REST: the kept stage, each answer as the live events showed it, the stopped member cut.
      const shown = await until(async () => {
        const v = await view(messageId);
        return v.partial?.cut.length === 1 && v;
      }, 'the stopped call stored');
      expect(shown.status).toBe('cancelled');
      const partial = shown.partial as PartialResult;
      expect(partial).toMatchObject({ reason: 'cancelled', why: USER_REASON, stage: c.stage });
      const succeeded = progressOf(events, c.stage, 'succeeded');
      expect(partial.answers.map((a) => a.model).sort()).toEqual([...c.finished].sort());
      for (const answer of partial.answers) {
        expect(answer.content.length).toBeGreaterThan(0);
        expect(succeeded.map((e) => e.payload.content)).toContain(answer.content);
      }
      expect(partial.cut).toEqual([
        expect.objectContaining({ model: c.running, stage: c.stage, kind: 'cancelled' }),
      ]);
      expect(shown.degraded?.summary).toContain(c.running);
      // The mode's own result holds no answer of the stage it never committed.
      for (const answer of partial.answers) {
        expect(JSON.stringify(shown.result)).not.toContain(JSON.stringify(answer.content).slice(1, -1));
      }

      // MCP: structured, text (who is missing first, then the kept answers), transcript.
      const { outcome, text } = await mcpOutcome(messageId);
      expect(outcome.partial).toBe(true);
      expect(outcome.finalText).toBeNull();
      expect(outcome.partialStage).toEqual(partial);
      expect(outcome.degraded?.summary).toContain(c.running);
      expect(text.split('\n')[0]).toContain(c.running);
      const md = await transcript(messageId);
      expect(md.split('\n').slice(0, 8).join('\n')).toContain('Degraded:');
      expect(md).toContain('## Kept from the unfinished stage');
      for (const answer of partial.answers) {
        expect(text).toContain(answer.content.slice(0, 200));
        expect(md).toContain(answer.content.split('\n')[0]);
      }

      // /v1: no made-up answer; the error names the kept answers and carries them.
      const lines = dataLines(streamed);
      const last = lines.at(-1) as {
        error?: { code: string; message: string };
        conclave?: Record<string, unknown>;
      };
      expect(last.error?.code).toBe('deliberation_cancelled');
      expect(lines.some((l) => JSON.stringify(l).includes('"finish_reason":"stop"'))).toBe(false);
      if (c.finished.length > 0) expect(last.error?.message).toMatch(/finished answers? .* kept/);
      expect(last.conclave?.kept).toEqual(partial);
      expect((last.conclave?.degraded as { summary: string }).summary).toContain(c.running);
    }, 30_000);
  });

  it('/v1 without streaming: the 409 carries the kept answers beside its error', async () => {
    await savePreset('v1-plain', CASES[0].preset);
    const pending = fetch(`${stack.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'conclave/preset/v1-plain',
        messages: [{ role: 'user', content: 'Answer me plainly, or keep what you have' }],
      }),
    });
    const messageId = await until(async () => {
      const [row] = (await stack.db.query(
        `SELECT m.id FROM messages m JOIN messages u ON u.conversation_id = m.conversation_id AND u.role = 'user'
         WHERE m.role = 'assistant' AND u.content = 'Answer me plainly, or keep what you have'`,
      )) as { id: string }[];
      if (!row) return null;
      return progressOf(await eventsOf(row.id), 'stage1', 'succeeded').length === 1 && row.id;
    }, 'the plain /v1 run to answer');
    expect((await stack.api('POST', `/api/deliberations/${messageId}/cancel`, { token: key })).status).toBe(
      200,
    );
    const response = await pending;
    expect(response.status).toBe(409);
    const body = (await response.json()) as {
      error: { code: string; message: string };
      conclave: { kept: PartialResult; degraded: { summary: string } };
      choices?: unknown;
    };
    expect(body.error.code).toBe('deliberation_cancelled');
    expect(body.error.message).toMatch(/1 finished answer of stage stage1 is kept \(not a final answer\)/);
    expect(body.choices).toBeUndefined();
    expect(body.conclave.kept.answers.map((a) => a.model)).toEqual(['sim/athena']);
    expect(body.conclave.kept.cut).toEqual([
      expect.objectContaining({ model: CASES[0].running, kind: 'cancelled' }),
    ]);
    expect(body.conclave.degraded.summary).toContain(CASES[0].running);
  }, 30_000);

  it('keeps what a cancelled batch item finished in the JSONL and CSV exports', async () => {
    const item = { question: 'Why export partial work?', ...CASES[0].preset };
    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', {
      token: key,
      body: { items: [item] },
    });
    expect(accepted.status).toBe(202);
    const { batchId } = accepted.body;
    const messageId = await until(async () => {
      const [row] = (await stack.db.query(
        "SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant'",
        [batchId],
      )) as { id: string }[];
      if (!row) return null;
      const stored = await eventsOf(row.id);
      return progressOf(stored, 'stage1', 'succeeded').length === 1 && row.id;
    }, 'the batch item to answer');
    expect((await stack.api('POST', `/api/deliberations/${messageId}/cancel`, { token: key })).status).toBe(
      200,
    );
    await until(async () => {
      const batch = await stack.api<BatchView>('GET', `/api/batches/${batchId}`, { token: key });
      return batch.body.cancelled === 1 && (await view(messageId)).partial?.cut.length === 1;
    }, 'the batch to end');
    const results = (format: string) =>
      fetch(`${stack.baseUrl}/api/batches/${batchId}/results?format=${format}`, {
        headers: { authorization: `Bearer ${key}` },
      }).then((r) => r.text());
    const [line] = (await results('jsonl'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as BatchResultLine);
    expect(line.status).toBe('cancelled');
    expect(line.partial?.answers.map((a) => a.model)).toEqual(['sim/athena']);
    expect(line.partial?.cut[0]).toMatchObject({ model: CASES[0].running, kind: 'cancelled' });
    expect(line.degraded?.summary).toContain(CASES[0].running);
    const [row] = parse(await results('csv'), { columns: true }) as Record<string, string>[];
    expect(row.degraded).toBe(line.degraded?.summary);
    expect(JSON.parse(row.partial)).toEqual(line.partial);
  }, 30_000);

  const DEGRADED: { name: string; preset: Record<string, unknown>; failed: string }[] = [
    {
      name: 'degraded-council',
      preset: council(['sim/athena', 'sim/x:fail', 'sim/y']),
      failed: 'sim/x:fail',
    },
    { name: 'degraded-vote', preset: vote(['sim/a', 'sim/x:fail', 'sim/c']), failed: 'sim/x:fail' },
    { name: 'degraded-jury', preset: jury(['sim/j1', 'sim/x:fail', 'sim/j3']), failed: 'sim/x:fail' },
    { name: 'degraded-debate', preset: debate(['sim/a', 'sim/x:fail', 'sim/c']), failed: 'sim/x:fail' },
    {
      name: 'degraded-delphi',
      preset: delphi(['sim/p1', 'sim/x:fail', 'sim/p3', 'sim/p4']),
      failed: 'sim/x:fail',
    },
  ];

  it.each(DEGRADED)(
    '$name: a complete run names its failed member in every output',
    async (d) => {
      await savePreset(d.name, d.preset);
      const response = await fetch(`${stack.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: `conclave/preset/${d.name}`,
          messages: [{ role: 'user', content: `What does ${d.name} say?` }],
        }),
      });
      expect(response.status).toBe(200);
      const completion = (await response.json()) as {
        id: string;
        choices: { message: { content: string; reasoning_content?: string } }[];
        conclave: { status: string; partial: boolean; degraded: { summary: string } | null };
      };
      const messageId = completion.id.replace(/^chatcmpl-/, '');
      const { content, reasoning_content: reasoning } = completion.choices[0].message;
      expect(completion.conclave.status).toBe('complete');
      expect(completion.conclave.partial).toBe(true);
      const summary = completion.conclave.degraded?.summary ?? '';
      expect(summary).toContain(d.failed);
      expect(content.endsWith(`\n\n---\nNote from Conclave: ${summary}.`)).toBe(true);
      expect(reasoning).toContain(`Note from Conclave: ${summary}.`);

      const shown = await view(messageId);
      expect(shown.degraded?.summary).toBe(summary);
      expect(shown.degraded?.missing).toContainEqual(
        expect.objectContaining({ model: d.failed, kind: 'failed' }),
      );
      expect(summary).toMatch(/^\d of \d answered — /);

      const { outcome, text } = await mcpOutcome(messageId);
      expect(outcome.status).toBe('complete');
      expect(outcome.degraded?.summary).toBe(summary);
      expect(text.split('\n')[0]).toBe(`Degraded: ${summary}`);
      const md = await transcript(messageId);
      expect(
        md
          .split('\n')
          .slice(0, 8)
          .some((l) => l.startsWith('- Degraded: ') && l.includes('sim/x:fail')),
      ).toBe(true);
    },
    30_000,
  );

  it('/v1 streaming: a degraded run ends its text with the note and its reasoning with the same line', async () => {
    await savePreset('degraded-stream', DEGRADED[0].preset);
    const chat = await streamChat('conclave/preset/degraded-stream', 'Streamed, with one member failing?');
    const lines = dataLines(await chat.rest) as {
      choices: { delta: { content?: string; reasoning_content?: string }; finish_reason: string | null }[];
      conclave?: { degraded: { summary: string } | null };
    }[];
    const content = lines.map((l) => l.choices[0]?.delta.content ?? '').join('');
    const reasoning = lines.map((l) => l.choices[0]?.delta.reasoning_content ?? '').join('');
    const summary = lines.at(-1)?.conclave?.degraded?.summary ?? '';
    expect(summary).toContain('sim/x:fail');
    expect(content.endsWith(`\n\n---\nNote from Conclave: ${summary}.`)).toBe(true);
    expect(reasoning.endsWith(`Note from Conclave: ${summary}.\n`)).toBe(true);
    expect(lines.at(-1)?.choices[0].finish_reason).toBe('stop');
  }, 30_000);

  it('a batch export names the failed member of each degraded item, in JSONL and in the CSV column', async () => {
    const items = DEGRADED.map((d) => {
      const modeConfig = (d.preset.modeConfig ?? {}) as Record<string, unknown>;
      return {
        question: `Exported: ${d.name}`,
        ...d.preset,
        ...(d.preset.mode === 'jury' ? { modeConfig: { ...modeConfig, content: 'Water is wet.' } } : {}),
      };
    });
    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', { token: key, body: { items } });
    expect(accepted.status).toBe(202);
    const { batchId } = accepted.body;
    await until(
      async () => {
        const batch = await stack.api<BatchView>('GET', `/api/batches/${batchId}`, { token: key });
        return batch.body.status === 'complete';
      },
      'the batch to finish',
      30_000,
    );
    const results = (format: string) =>
      fetch(`${stack.baseUrl}/api/batches/${batchId}/results?format=${format}`, {
        headers: { authorization: `Bearer ${key}` },
      }).then((r) => r.text());
    const lines = (await results('jsonl'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as BatchResultLine);
    const rows = parse(await results('csv'), { columns: true }) as Record<string, string>[];
    expect(lines.map((l) => l.status)).toEqual(DEGRADED.map(() => 'complete'));
    lines.forEach((line, i) => {
      expect(line.degraded?.summary).toMatch(/^\d of \d answered — sim\/x:fail: /);
      expect(line.degraded?.missing).toContainEqual(
        expect.objectContaining({ model: 'sim/x:fail', kind: 'failed' }),
      );
      expect(line.partial).toBeNull();
      expect(rows[i].degraded).toBe(line.degraded?.summary);
      expect(rows[i].partial).toBe('');
    });
  }, 60_000);
});

describe('a run that failed or hit the time cap keeps its finished answers', () => {
  const stack = new TestStack({ DELIBERATION_CAP_MS: '1500' });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  it('vote: the answers that arrived are kept, the straggler is named as cut', async () => {
    const { messageId, events } = await stack.run({
      question: 'Who answers within the cap?',
      mode: 'vote',
      modeConfig: { models: ['sim/a', 'sim/b', `sim/c:${SLOW}@answer`], chairmanModel: 'sim/chair' },
    });
    expect(events.at(-1)?.type).toBe('error');
    const shown = await until(async () => {
      const v = (await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`)).body;
      return v.calls.length === 3 && v;
    }, 'the stopped call stored');
    expect(shown.status).toBe('failed');
    expect(shown.partial).toMatchObject({ reason: 'failed', stage: 'answer' });
    expect(shown.partial?.answers.map((a) => a.model).sort()).toEqual(['sim/a', 'sim/b']);
    expect(shown.partial?.cut).toEqual([
      expect.objectContaining({
        model: `sim/c:${SLOW}@answer`,
        kind: 'cut',
        why: 'stopped: the deliberation ended',
      }),
    ]);
    expect(shown.degraded?.summary).toBe(
      `2 of 3 answered — sim/c:${SLOW}@answer: stopped: the deliberation ended`,
    );
  }, 30_000);

  it('council: one answer is too few to go on; that answer is kept, the failed member named', async () => {
    const { messageId, events } = await stack.run({
      question: 'Can one member carry a council?',
      councilModels: ['sim/athena', 'sim/x:fail'],
      chairmanModel: 'sim/chair',
    });
    expect(events.at(-1)?.type).toBe('error');
    const shown = (await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`)).body;
    expect(shown.status).toBe('failed');
    expect(shown.partial).toMatchObject({ reason: 'failed', stage: 'stage1' });
    expect(shown.partial?.answers.map((a) => a.model)).toEqual(['sim/athena']);
    expect(shown.partial?.cut).toEqual([expect.objectContaining({ model: 'sim/x:fail', kind: 'failed' })]);
    expect(shown.degraded?.summary).toBe(
      '1 of 2 answered — sim/x:fail: HTTP 400 from the simulated provider: simulated failure',
    );
  }, 30_000);
});
