import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { BatchView, DeliberationView, DeliveredEvent } from '@conclave/contracts';
import { SIMULATED_FALLBACK, SIMULATED_RESPONDERS, STOPPED_CALL_ERROR } from '@conclave/deliberation';
import {
  OpenAiCompatibleProvider,
  RetryingProvider,
  hashString,
  parseSimModel,
  seededRandom,
  type ChatMessage,
} from '@conclave/llm';
import type { Socket } from 'socket.io-client';
import type { RunningWorker } from '../apps/worker/src/worker';
import {
  startChatCompletionsServer,
  type ChatBehaviour,
  type ChatCompletionsServer,
  type RecordedChatRequest,
  type RequestOutcome,
  type ScriptContext,
} from '../libs/llm/src/testing/chat-completions-server';
import { TestStack } from './support/harness';
import { sleep, until } from './support/wait';

/**
 * Stopping a running deliberation (POST /api/deliberations/:id/cancel, Socket.IO `cancel`, a
 * batch's cancel): the model calls in flight are aborted in whichever worker runs them (the local
 * chat-completions server sees the connection closed), nothing is stored after the stop but those
 * calls' outcomes, no further stage runs, and the last event is `cancelled { reason }`.
 */

const USER_REASON = 'Cancelled by the user.';
const BATCH_REASON = 'The batch was cancelled.';
/** How soon after the stop every call in flight must be seen aborted at the provider. */
const ABORT_WITHIN_MS = 1000;

type Event = DeliveredEvent & Record<string, unknown>;

const messagesOf = (request: RecordedChatRequest) => request.messages as ChatMessage[];
const promptOf = (request: RecordedChatRequest) =>
  [...messagesOf(request)].reverse().find((m) => m.role === 'user')?.content ?? '';
const responderFor = (request: RecordedChatRequest) =>
  SIMULATED_RESPONDERS.find((r) => r.matches(promptOf(request))) ?? SIMULATED_FALLBACK;
/** What the prompt asks for, as the simulator names it: answer, rank, vote, classify, title, … */
const kindOf = (request: RecordedChatRequest) => responderFor(request).kind;

/** A well-formed answer to whatever the prompt asks, from the product's own simulated responders. */
function formatted(request: RecordedChatRequest): string {
  const model = request.model ?? 'local/unknown';
  const prompt = promptOf(request);
  const { persona, flags } = parseSimModel(model);
  return responderFor(request).respond({
    model,
    persona,
    flags,
    messages: messagesOf(request),
    prompt,
    random: seededRandom(hashString(`cancel|${model}|${prompt}`)),
    seed: 'cancel',
  });
}

/**
 * Per test tag (a part of every model id of one deliberation): the kinds of call that stream
 * slowly (a chunk every 2 s: in flight until aborted), or answer after a short delay.
 */
const slowKinds = new Map<string, string[]>();
const delayedKinds = new Map<string, { kinds: string[]; delayMs: number }>();
const tagOf = (request: RecordedChatRequest) => /(t\d+)-/.exec(request.model ?? '')?.[1] ?? '';

function script({ request }: ScriptContext): ChatBehaviour {
  const kind = kindOf(request);
  const tag = tagOf(request);
  const content = formatted(request);
  if (slowKinds.get(tag)?.includes(kind)) return { kind: 'success', content, chunks: 20, chunkDelayMs: 2000 };
  const delayed = delayedKinds.get(tag);
  if (delayed?.kinds.includes(kind)) return { kind: 'success', content, delayMs: delayed.delayMs };
  return { kind: 'success', content, promptTokens: 50, completionTokens: 10, cost: 0.001 };
}

let tags = 0;
const nextTag = () => `t${++tags}`;

interface Stage {
  stage: string;
  kind: string;
}

interface ModeCase {
  mode: string;
  body: (models: (name: string) => string) => Record<string, unknown>;
  /** The first stage that calls models (Stage 1). */
  first: Stage;
  /** A later stage, and the stages that start calls up to it. */
  later: Stage & { started: string[] };
}

const MODES: ModeCase[] = [
  {
    mode: 'council',
    body: (m) => ({ question: 'Why stop?', councilModels: [m('a'), m('b')], chairmanModel: m('chair') }),
    first: { stage: 'stage1', kind: 'answer' },
    later: { stage: 'stage2', kind: 'rank', started: ['stage1', 'stage2'] },
  },
  {
    mode: 'vote',
    body: (m) => ({
      question: 'Which is best?',
      mode: 'vote',
      modeConfig: { models: [m('a'), m('b'), m('c')] },
    }),
    first: { stage: 'answer', kind: 'answer' },
    later: { stage: 'vote', kind: 'vote', started: ['answer', 'vote'] },
  },
  {
    mode: 'jury',
    body: (m) => ({
      question: 'Is it right?',
      mode: 'jury',
      modeConfig: {
        content: 'Water boils at 100 degrees Celsius at sea level.',
        jurorModels: [m('j1'), m('j2'), m('j3')],
        foremanModel: m('fore'),
      },
    }),
    // `present` calls no model: the jurors' deliberation is the first stage with calls.
    first: { stage: 'deliberation', kind: 'evaluation' },
    later: { stage: 'verdict', kind: 'foreman', started: ['deliberation', 'verdict'] },
  },
  {
    mode: 'debate',
    body: (m) => ({
      question: 'Tabs or spaces?',
      mode: 'debate',
      modeConfig: { models: [m('a'), m('b'), m('c')] },
    }),
    first: { stage: 'round1', kind: 'answer' },
    later: { stage: 'revision', kind: 'revision', started: ['round1', 'revision'] },
  },
  {
    mode: 'delphi',
    body: (m) => ({
      question: 'How many piano tuners work in Chicago?',
      mode: 'delphi',
      // A stubborn panelist keeps the panel from converging in round 1: a round 2 follows.
      modeConfig: { panelistModels: [m('p1'), m('p2'), m('p3:stubborn')], facilitatorModel: m('fac') },
    }),
    first: { stage: 'classify', kind: 'classify' },
    later: { stage: 'round_2', kind: 'reestimate', started: ['classify', 'round_1', 'round_2'] },
  },
];

/** How a request settled, or 'open' if it had not `withinMs` after `from`. */
async function settledBy(request: RecordedChatRequest, from: number): Promise<RequestOutcome | 'open'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'open'>((resolve) => {
    timer = setTimeout(() => resolve('open'), Math.max(0, from + ABORT_WITHIN_MS - Date.now()));
  });
  try {
    return await Promise.race([request.settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('stopping a deliberation', () => {
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
    RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
    // A real provider is configured (the in-process worker gets it injected; a spawned worker is
    // pointed at the local server by its own environment).
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
  });
  let server: ChatCompletionsServer;
  let worker: RunningWorker;
  let alice = '';
  let bob = '';
  let bobSocket: Socket;

  beforeAll(async () => {
    server = await startChatCompletionsServer(script);
    await stack.start({ worker: false });
    worker = await stack.startWorker(
      new RetryingProvider(new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: 'sk-cancel' }), {
        policy: { maxAttempts: 2, baseDelayMs: 20, maxDelayMs: 200 },
      }),
    );
    [alice, bob] = await Promise.all([stack.createUser('alice'), stack.createUser('bob')]);
    bobSocket = await stack.connect(bob);
  }, 60_000);
  afterAll(async () => {
    await stack.stop();
    await server.close();
  });

  const cancel = (messageId: string, token = alice) =>
    stack.api<DeliberationView & { message?: string }>('POST', `/api/deliberations/${messageId}/cancel`, {
      token,
    });
  const view = async <R = unknown>(messageId: string) =>
    (await stack.api<DeliberationView<R>>('GET', `/api/deliberations/${messageId}`, { token: alice })).body;
  const storedEvents = async (messageId: string) =>
    (await stack.db.query(
      'SELECT seq, type, payload FROM deliberation_events WHERE message_id = $1 ORDER BY seq',
      [messageId],
    )) as { seq: number; type: string; payload: Record<string, unknown> }[];
  const stoppedCalls = async (messageId: string) =>
    (
      (await stack.db.query(
        'SELECT count(*)::int AS n FROM model_calls WHERE message_id = $1 AND error = $2 AND NOT ok',
        [messageId, STOPPED_CALL_ERROR.cancelled],
      )) as { n: number }[]
    )[0].n;
  const requestsOf = (tag: string) =>
    server.requests.filter((r) => tagOf(r) === tag && kindOf(r) !== 'title');
  const progress = (events: Event[], state: string) =>
    events.filter((e) => e.type === 'model_progress' && e.state === state);

  /** A deliberation of alice's, with every event it delivers over a socket of its own. */
  async function startWatched(body: unknown) {
    const { messageId } = await stack.deliberate(body, alice);
    const socket = await stack.connect(alice);
    const live: Event[] = [];
    socket.onAny((_name: string, event: Event) => {
      if (event?.messageId === messageId) live.push(event);
    });
    const followed = stack.follow(messageId, { socket, timeoutMs: 30_000 }) as Promise<Event[]>;
    followed.catch(() => undefined);
    return { messageId, socket, live, followed };
  }

  interface StopOptions {
    /** How the stop is asked for. */
    via?: 'http' | 'socket';
    /** Runs while the stage's calls are in flight, before the stop. */
    before?: (messageId: string) => Promise<void>;
    /** Where the calls must have been made: the spawned worker strips the `local/` prefix. */
    worker?: 'in-process' | 'spawned';
  }

  /**
   * Starts a deliberation of the mode whose `stage` streams slowly, stops it once that stage's calls
   * are in flight at the provider, and checks everything a stop promises.
   */
  async function stopDuring(c: ModeCase, which: 'first' | 'later', options: StopOptions = {}) {
    const tag = nextTag();
    const target = c[which];
    const startedStages = which === 'first' ? [c.first.stage] : c.later.started;
    slowKinds.set(tag, [target.kind]);
    const run = await startWatched(c.body((name) => `local/${tag}-${name}`));
    const { messageId } = run;

    // The stage's calls are under way: each one that reported `started` is open at the provider.
    const started = () => progress(run.live, 'started').filter((e) => e.stage === target.stage);
    const open = () => requestsOf(tag).filter((r) => kindOf(r) === target.kind && r.outcome === undefined);
    await until(
      () => started().length > 0 && open().length === started().length,
      `${c.mode} ${target.stage} calls in flight`,
    );
    const inFlight = open();
    if (options.worker === 'spawned')
      expect(inFlight.every((r) => !r.model?.startsWith('local/'))).toBe(true);
    else expect(inFlight.every((r) => r.model?.startsWith('local/'))).toBe(true);
    await options.before?.(messageId);
    const rowsBefore = await stack.stageRows(messageId);
    const requestsBefore = requestsOf(tag).length;

    const stoppedAt = Date.now();
    if (options.via === 'socket') {
      expect(await run.socket.emitWithAck('cancel', { messageId })).toEqual({
        ok: true,
        status: 'cancelled',
      });
    } else {
      const response = await cancel(messageId);
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ messageId, status: 'cancelled', error: USER_REASON });
    }

    // Aborted where they run, within a second: the provider sees each connection closed.
    const outcomes = await Promise.all(inFlight.map((r) => settledBy(r, stoppedAt)));
    expect(outcomes).toEqual(inFlight.map(() => 'client-disconnected'));

    // The last event is the stop, delivered live.
    const events = await run.followed;
    run.socket.disconnect();
    const last = events.at(-1)!;
    expect(last).toMatchObject({ type: 'cancelled', reason: USER_REASON });
    expect(events.filter((e) => ['complete', 'error', 'cancelled'].includes(e.type))).toHaveLength(1);

    // The aborted calls store their outcomes (usage); nothing else is written after the stop.
    await until(async () => (await stoppedCalls(messageId)) === inFlight.length, 'the stopped calls stored');
    await sleep(300);
    const stored = await storedEvents(messageId);
    expect(stored.at(-1)).toMatchObject({
      seq: last.seq,
      type: 'cancelled',
      payload: { reason: USER_REASON },
    });
    expect(await stack.stageRows(messageId)).toEqual(rowsBefore);
    // No further stage: no call after the stop, no stage started beyond the stopped one.
    expect(requestsOf(tag)).toHaveLength(requestsBefore);
    expect([...new Set(progress(events, 'started').map((e) => e.stage))]).toEqual(startedStages);

    const shown = await view(messageId);
    expect(shown).toMatchObject({ status: 'cancelled', error: USER_REASON });
    expect(shown.completedAt).not.toBeNull();
    const stopped = shown.calls.filter((call) => call.error === STOPPED_CALL_ERROR.cancelled);
    expect(stopped).toHaveLength(inFlight.length);
    for (const call of stopped) {
      // Nothing reported by the provider for an aborted stream: no usage, no cost invented.
      expect(call).toMatchObject({ stage: target.stage, ok: false, promptTokens: null, costUsd: null });
    }
    // The stages before it stay, with their calls (and their usage).
    const earlier = shown.calls.filter((call) => call.stage !== target.stage);
    expect(earlier.every((call) => call.ok)).toBe(true);
    if (which === 'later') {
      expect(earlier.length).toBeGreaterThan(0);
      expect(earlier.every((call) => call.promptTokens === 50 && call.costUsd === 0.001)).toBe(true);
    }
    return { messageId, events, shown, rowsBefore };
  }

  describe.each(MODES)('$mode', (c) => {
    it('stops during Stage 1', async () => {
      await stopDuring(c, 'first');
    });

    it('stops during a later stage, keeping what earlier stages stored', async () => {
      const { shown, rowsBefore } = await stopDuring(c, 'later');
      expect(rowsBefore.length).toBeGreaterThan(0);
      expect(shown.result).not.toBeNull();
    });
  });

  it('keeps the partial council result: Stage 1 answers, no ranking, no synthesis', async () => {
    const { shown } = await stopDuring(MODES[0], 'later');
    const result = shown.result as { stage1?: { model: string }[]; stage2?: unknown[]; stage3?: unknown };
    expect(result.stage1).toHaveLength(2);
    expect(result.stage2 ?? []).toEqual([]);
    expect(result.stage3 ?? null).toBeNull();
  });

  it("answers 404 for another user's deliberation and leaves it running; 409 once it has ended", async () => {
    const { messageId } = await stopDuring(MODES[1], 'first', {
      before: async (id) => {
        const foreign = await cancel(id, bob);
        expect(foreign.status).toBe(404);
        expect(foreign.body.message).toBe(`deliberation ${id} not found`);
        expect(await bobSocket.emitWithAck('cancel', { messageId: id })).toEqual({
          error: { message: `deliberation ${id} not found`, statusCode: 404 },
        });
        for (const unknown of [randomUUID(), 'not-a-uuid']) expect((await cancel(unknown)).status).toBe(404);
        expect((await view(id)).status).toBe('running');
      },
    });
    // A second stop: 409, naming the status it ended with.
    const again = await cancel(messageId);
    expect(again.status).toBe(409);
    expect(again.body.message).toBe(
      'This deliberation has already ended (status: cancelled); there is nothing to cancel.',
    );
  });

  it('answers 409 naming the status for a finished deliberation, over HTTP and Socket.IO', async () => {
    const tag = nextTag();
    const run = await startWatched(MODES[0].body((name) => `local/${tag}-${name}`));
    expect((await run.followed).at(-1)?.type).toBe('complete');
    const before = await storedEvents(run.messageId);
    const refused = await cancel(run.messageId);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      statusCode: 409,
      error: 'Conflict',
      message: 'This deliberation has already ended (status: complete); there is nothing to cancel.',
    });
    expect(await run.socket.emitWithAck('cancel', { messageId: run.messageId })).toEqual({
      error: {
        message: 'This deliberation has already ended (status: complete); there is nothing to cancel.',
        statusCode: 409,
      },
    });
    run.socket.disconnect();
    expect(await storedEvents(run.messageId)).toEqual(before);
    expect((await view(run.messageId)).status).toBe('complete');
  });

  it('stops over Socket.IO; a cancel without a messageId names the field', async () => {
    const socket = await stack.connect(alice);
    for (const body of [{}, { messageId: 42 }, null]) {
      expect(await socket.emitWithAck('cancel', body)).toEqual({
        error: {
          message: 'Invalid request: messageId (must be a string)',
          fields: { messageId: 'must be a string' },
          statusCode: 400,
        },
      });
    }
    expect(await socket.emitWithAck('cancel', { messageId: randomUUID() })).toEqual({
      error: { message: expect.stringMatching(/^deliberation .* not found$/), statusCode: 404 },
    });
    socket.disconnect();
    await stopDuring(MODES[3], 'first', { via: 'socket' });
  });

  it("deleting a conversation stops its running deliberation's calls too", async () => {
    const tag = nextTag();
    slowKinds.set(tag, ['answer']);
    const m = (name: string) => `local/${tag}-${name}`;
    const { messageId, conversationId } = await stack.deliberate(
      { question: 'Delete me', councilModels: [m('a'), m('b')], chairmanModel: m('chair') },
      alice,
    );
    await until(() => requestsOf(tag).length === 2, 'both Stage 1 calls at the provider');
    const deleted = await stack.api('DELETE', `/api/conversations/${conversationId}`, { token: alice });
    expect(deleted.status).toBe(204);
    const from = Date.now();
    const outcomes = await Promise.all(requestsOf(tag).map((r) => settledBy(r, from)));
    expect(outcomes).toEqual(['client-disconnected', 'client-disconnected']);
    expect((await stack.api('GET', `/api/deliberations/${messageId}`, { token: alice })).status).toBe(404);
  });

  it('a deliberation stopped while it waits for a worker never reaches a provider: its job is gone', async () => {
    const tag = nextTag();
    const m = (name: string) => `local/${tag}-${name}`;
    await stack.stopWorker(worker);
    let messageId = '';
    try {
      ({ messageId } = await stack.deliberate(
        { question: 'Stop me before I start', councilModels: [m('a'), m('b')], chairmanModel: m('chair') },
        alice,
      ));
      expect((await stack.jobsOf(messageId)).map((j) => j.id)).toEqual([`${messageId}__stage1`]);
      expect((await cancel(messageId)).status).toBe(200);
      // Its job, which carried the question, is removed: no worker takes it, no question goes out.
      expect(await stack.jobsOf(messageId)).toEqual([]);
      // The same for a conversation deleted while its first deliberation waits.
      const doomed = await stack.deliberate(
        { question: 'Delete me before I start', councilModels: [m('d'), m('e')], chairmanModel: m('chair') },
        alice,
      );
      expect((await stack.jobsOf(doomed.messageId)).map((j) => j.id)).toEqual([
        `${doomed.messageId}__stage1`,
      ]);
      const deleted = await stack.api('DELETE', `/api/conversations/${doomed.conversationId}`, {
        token: alice,
      });
      expect(deleted.status).toBe(204);
      expect(await stack.jobsOf(doomed.messageId)).toEqual([]);
    } finally {
      worker = await stack.startWorker(
        new RetryingProvider(new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: 'sk-cancel' }), {
          policy: { maxAttempts: 2, baseDelayMs: 20, maxDelayMs: 200 },
        }),
      );
    }
    // The worker is back and runs the next deliberation; the stopped and the deleted one sent
    // nothing, their titles neither.
    const next = nextTag();
    const after = await stack.deliberate(
      {
        question: 'After the stop',
        councilModels: [`local/${next}-a`, `local/${next}-b`],
        chairmanModel: `local/${next}-c`,
      },
      alice,
    );
    const afterSocket = await stack.connect(alice);
    expect((await stack.follow(after.messageId, { socket: afterSocket })).at(-1)?.type).toBe('complete');
    afterSocket.disconnect();
    expect(server.requests.filter((r) => tagOf(r) === tag)).toEqual([]);
    expect((await storedEvents(messageId)).map((e) => e.type)).toEqual(['cancelled']);
    expect((await view(messageId)).status).toBe('cancelled');
  });

  it('ends the SSE stream after `cancelled`, then answers 204', async () => {
    const stream: { text?: Promise<string> } = {};
    const { messageId, events } = await stopDuring(MODES[2], 'later', {
      before: async (id) => {
        const response = await fetch(`${stack.baseUrl}/api/deliberations/${id}/events`, {
          headers: { authorization: `Bearer ${alice}` },
        });
        expect(response.status).toBe(200);
        stream.text = response.text();
        stream.text.catch(() => undefined);
      },
    });
    // The stream ends by itself after the stop's event.
    const text = await Promise.race([stream.text!, sleep(5000).then(() => 'still open')]);
    const blocks = text.split('\n\n').filter((block) => block.startsWith('event: '));
    expect(blocks.at(-1)).toMatch(/^event: cancelled\nid: (\d+)\n/);
    expect(blocks.at(-1)).toContain(`id: ${events.at(-1)!.seq}\n`);
    const after = await fetch(`${stack.baseUrl}/api/deliberations/${messageId}/events`, {
      headers: { authorization: `Bearer ${alice}`, 'last-event-id': String(events.at(-1)!.seq) },
    });
    expect(after.status).toBe(204);
  });

  it('a stop racing the last commit ends each deliberation once: stopped, or complete and 409', async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < 10; i++) {
      const tag = nextTag();
      // The chairman answers 150 ms after its call starts; the stop comes 0–360 ms after that.
      delayedKinds.set(tag, { kinds: ['synthesis'], delayMs: 150 });
      const run = await startWatched(MODES[0].body((name) => `local/${tag}-${name}`));
      await until(
        () => progress(run.live, 'started').some((e) => e.stage === 'stage3'),
        'the chairman call started',
      );
      await sleep(i * 40);
      const response = await cancel(run.messageId);
      const events = await run.followed;
      run.socket.disconnect();
      const stored = await storedEvents(run.messageId);
      const terminal = stored.filter((e) => ['complete', 'error', 'cancelled'].includes(e.type));
      const status = (await view(run.messageId)).status;
      const outcome = {
        response: response.status,
        status,
        last: events.at(-1)?.type,
        storedLast: stored.at(-1)?.type,
        terminal: terminal.length,
      };
      if (response.status === 200) {
        expect(outcome).toEqual({
          response: 200,
          status: 'cancelled',
          last: 'cancelled',
          storedLast: 'cancelled',
          terminal: 1,
        });
      } else {
        expect(outcome).toEqual({
          response: 409,
          status: 'complete',
          last: 'complete',
          storedLast: 'complete',
          terminal: 1,
        });
        expect(response.body.message).toMatch(/\(status: complete\)/);
      }
      outcomes.push(status);
    }
    // The timings span both sides of the commit.
    expect(new Set(outcomes)).toEqual(new Set(['cancelled', 'complete']));
  }, 30_000);

  it("a batch's cancel stops its running item through the same path and finishes the batch", async () => {
    const tag = nextTag();
    slowKinds.set(tag, ['answer']);
    const models = (name: string) => `local/${tag}-${name}`;
    const submitted = await stack.api<{ batchId: string }>('POST', '/api/batches', {
      token: alice,
      body: {
        name: 'stopped',
        defaults: { councilModels: [models('a'), models('b')], chairmanModel: models('chair') },
        items: [{ question: 'First?' }, { question: 'Second?' }, { question: 'Third?' }],
        concurrency: 1,
      },
    });
    expect(submitted.status).toBe(202);
    const { batchId } = submitted.body;
    const [{ id: itemId }]: { id: string }[] = await stack.db.query(
      `SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant' AND batch_index = 0`,
      [batchId],
    );
    const socket = await stack.connect(alice);
    const followed = stack.follow(itemId, { socket }) as Promise<Event[]>;
    followed.catch(() => undefined);
    await until(
      () => requestsOf(tag).filter((r) => r.outcome === undefined).length === 2,
      'the first item calling its models',
    );
    const inFlight = requestsOf(tag).filter((r) => r.outcome === undefined);
    const requestsBefore = requestsOf(tag).length;

    const stoppedAt = Date.now();
    const cancelled = await stack.api<BatchView>('POST', `/api/batches/${batchId}/cancel`, { token: alice });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', queued: 0, running: 0, cancelled: 3 });
    expect(cancelled.body.finishedAt).not.toBeNull();
    const outcomes = await Promise.all(inFlight.map((r) => settledBy(r, stoppedAt)));
    expect(outcomes).toEqual(['client-disconnected', 'client-disconnected']);

    const events = await followed;
    socket.disconnect();
    expect(events.at(-1)).toMatchObject({ type: 'cancelled', reason: BATCH_REASON });
    await until(async () => (await stoppedCalls(itemId)) === 2, 'the stopped calls stored');
    await sleep(300);
    expect((await storedEvents(itemId)).at(-1)).toMatchObject({ type: 'cancelled', seq: events.at(-1)!.seq });
    expect(await view(itemId)).toMatchObject({ status: 'cancelled', error: BATCH_REASON });
    // Nothing else of the batch ran.
    expect(requestsOf(tag)).toHaveLength(requestsBefore);
    const batch = await stack.api<BatchView>('GET', `/api/batches/${batchId}`, { token: alice });
    expect(batch.body).toMatchObject({
      status: 'cancelled',
      queued: 0,
      running: 0,
      complete: 0,
      cancelled: 3,
    });
  });

  it("a user's stop of a batch item lets the batch start its next item", async () => {
    const tag = nextTag();
    slowKinds.set(tag, ['answer']);
    const models = (name: string) => `local/${tag}-${name}`;
    const submitted = await stack.api<{ batchId: string }>('POST', '/api/batches', {
      token: alice,
      body: {
        defaults: { councilModels: [models('a'), models('b')], chairmanModel: models('chair') },
        items: [{ question: 'One?' }, { question: 'Two?' }],
        concurrency: 1,
      },
    });
    const { batchId } = submitted.body;
    const items: { id: string }[] = await stack.db.query(
      `SELECT id FROM messages WHERE batch_id = $1 AND role = 'assistant' ORDER BY batch_index`,
      [batchId],
    );
    const open = () => requestsOf(tag).filter((r) => r.outcome === undefined);
    await until(() => open().length === 2, 'the first item calling its models');
    const first = open();
    expect((await cancel(items[0].id)).status).toBe(200);
    // The second item starts, with calls of its own.
    await until(
      () => open().length === 2 && open().every((r) => !first.includes(r)),
      'the second item calling its models',
    );
    expect(first.map((r) => r.outcome)).toEqual(['client-disconnected', 'client-disconnected']);
    const cancelled = await stack.api<BatchView>('POST', `/api/batches/${batchId}/cancel`, { token: alice });
    expect(cancelled.body).toMatchObject({ status: 'cancelled', running: 0, cancelled: 2 });
    await until(() => open().length === 0, 'the second item aborted');
  });

  describe('with the call in a worker of another process', () => {
    let child: ChildProcess;

    beforeAll(async () => {
      // Only the spawned worker consumes from here on.
      await stack.stopWorker(worker);
      child = await stack.spawnWorker({ OPENAI_BASE_URL: server.baseURL });
    }, 60_000);

    it('aborts it from this gateway, during Stage 1 and a later stage', async () => {
      expect(child.exitCode).toBeNull();
      await stopDuring(MODES[0], 'first', { worker: 'spawned' });
      await stopDuring(MODES[4], 'later', { worker: 'spawned' });
    }, 30_000);
  });
});
