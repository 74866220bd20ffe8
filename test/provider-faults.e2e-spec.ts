import path from 'node:path';
import type { DeliberationView, DeliveredEvent } from '@conclave/contracts';
import { SIMULATED_FALLBACK, SIMULATED_RESPONDERS } from '@conclave/deliberation';
import {
  OpenAiCompatibleProvider,
  RetryingProvider,
  hashString,
  parseSimModel,
  seededRandom,
  type ChatMessage,
} from '@conclave/llm';
import {
  startChatCompletionsServer,
  type ChatBehaviour,
  type ChatCompletionsServer,
  type RecordedChatRequest,
  type ScriptContext,
} from '../libs/llm/src/testing/chat-completions-server';
import { TestStack } from './support/harness';

/**
 * Providers misbehaving behind the real HTTP path (OpenAI-compatible provider → local fake
 * server): every fault ends as the mode's edge-case table says, and the number of calls the
 * server sees stays bounded by attempts per call × planned calls (no retry storms).
 * test/openai-provider.e2e-spec.ts covers a single 429, a 500 retried and a 400 not retried.
 */

const ROOT = path.resolve(__dirname, '..');
const API_KEY = 'sk-faults-5ecret-0123456789abcdef';
const POLICY = { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 5000 };
/** The stack's default per-call timeout (modes that refuse a modeConfig.timeoutMs this small). */
const MODEL_TIMEOUT_MS = 3000;

type Event = DeliveredEvent & Record<string, unknown>;
interface RuleContext {
  /** The simulator's name for the prompt: answer, rank, synthesis, title, evaluation, vote, ... */
  kind: string;
  /** 0-based index among this model's calls of this kind. */
  kindCallIndex: number;
  request: RecordedChatRequest;
}
/** What a model does; undefined: answer in the prompt's format, as the simulator would. */
type Rule = (call: RuleContext) => ChatBehaviour | undefined;

const messagesOf = (request: RecordedChatRequest) => request.messages as ChatMessage[];
const promptOf = (request: RecordedChatRequest) =>
  [...messagesOf(request)].reverse().find((m) => m.role === 'user')?.content ?? '';
const responderFor = (request: RecordedChatRequest) =>
  SIMULATED_RESPONDERS.find((r) => r.matches(promptOf(request))) ?? SIMULATED_FALLBACK;
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
    random: seededRandom(hashString(`faults|${model}|${prompt}`)),
    seed: 'faults',
  });
}

const rules = new Map<string, Rule>();
const kindCounts = new Map<string, number>();

function script({ request }: ScriptContext): ChatBehaviour {
  const model = request.model ?? '';
  const kind = kindOf(request);
  const counter = `${model}|${kind}`;
  const kindCallIndex = kindCounts.get(counter) ?? 0;
  kindCounts.set(counter, kindCallIndex + 1);
  const custom = rules.get(model)?.({ kind, kindCallIndex, request });
  return custom ?? { kind: 'success', content: formatted(request), promptTokens: 50, completionTokens: 10 };
}

/** Behaviour shortcuts. */
const rateLimited = (retryAfterSeconds: number): ChatBehaviour => ({ kind: 'rate-limit', retryAfterSeconds });
const rateLimitedMs = (retryAfterMs: number): ChatBehaviour => ({ kind: 'rate-limit', retryAfterMs });
const http = (status: number, message?: string): ChatBehaviour => ({ kind: 'http-error', status, message });
const text = (content: string): ChatBehaviour => ({ kind: 'success', content });
/** Whether a rule for `onlyKind` (or, without one, for every kind but the title) applies. */
const applies = (kind: string, onlyKind?: string) => (onlyKind ? kind === onlyKind : kind !== 'title');
/** Misbehaves on the first `times` calls of a kind (or of every kind but the title), then answers. */
const firstCalls =
  (times: number, behaviour: ChatBehaviour, onlyKind?: string): Rule =>
  ({ kind, kindCallIndex }) =>
    applies(kind, onlyKind) && kindCallIndex < times ? behaviour : undefined;
/** Misbehaves on every call of a kind (or of every kind but the title, which runs on its own clock). */
const always =
  (behaviour: ChatBehaviour, onlyKind?: string): Rule =>
  ({ kind }) =>
    applies(kind, onlyKind) ? behaviour : undefined;

const GARBAGE_RANKING =
  'These are all thoughtful answers and I would not put one above another; each has merits.';
const GARBAGE_JUROR = 'I read it. It is fine in places and less fine in others; I have no numbers to give.';

describe('providers misbehaving, through the real HTTP path', () => {
  let server: ChatCompletionsServer;
  const stack = new TestStack({
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    MODEL_TIMEOUT_MS: String(MODEL_TIMEOUT_MS),
  });

  beforeAll(async () => {
    server = await startChatCompletionsServer(script);
    const provider = new RetryingProvider(
      new OpenAiCompatibleProvider({ baseURL: server.baseURL, apiKey: API_KEY }),
      {
        policy: POLICY,
      },
    );
    await stack.start({ realProvider: provider });
  }, 60_000);
  afterAll(async () => {
    await stack.stop();
    await server.close();
  });

  const setRules = (entries: Record<string, Rule>) => {
    for (const [model, rule] of Object.entries(entries)) rules.set(model, rule);
  };
  const callsOf = (model: string) => server.requests.filter((r) => r.model === model);
  const callsUnder = (prefix: string) => server.requests.filter((r) => r.model?.startsWith(prefix));
  const progress = (events: Event[], state: string, stage?: string) =>
    events.filter((e) => e.type === 'model_progress' && e.state === state && (!stage || e.stage === stage));
  const one = <T = Record<string, unknown>>(events: Event[], type: string) =>
    events.find((e) => e.type === type) as (Event & T) | undefined;
  const view = async <R>(messageId: string) =>
    (await stack.api<DeliberationView<R>>('GET', `/api/deliberations/${messageId}`)).body;

  /**
   * No retry storm: the server saw at most maxAttempts calls per planned call (each planned call
   * reports `started` once; the silent title call is one more), and none of them is still open.
   */
  async function expectBoundedAndSettled(prefix: string, events: Event[]): Promise<void> {
    const planned = progress(events, 'started').length;
    const calls = callsUnder(prefix);
    const titleCalls = calls.filter((r) => kindOf(r) === 'title').length;
    expect(calls.length - titleCalls).toBeLessThanOrEqual(POLICY.maxAttempts * planned);
    expect(titleCalls).toBeLessThanOrEqual(POLICY.maxAttempts);
    // Every planned call settled one way or the other.
    expect(progress(events, 'succeeded').length + progress(events, 'failed').length).toBe(planned);
    let timer: NodeJS.Timeout | undefined;
    const lingering = await Promise.race([
      Promise.all(calls.map((r) => r.settled)).then(() => 'settled'),
      new Promise((resolve) => (timer = setTimeout(() => resolve('lingering'), 2000))),
    ]);
    clearTimeout(timer);
    expect({
      lingering,
      open: calls.filter((r) => r.outcome === undefined).map((r) => `${r.model}:${kindOf(r)}`),
    }).toEqual({ lingering: 'settled', open: [] });
  }

  /** 00-shared.md §4: a message a user can act on, no stack trace, no secret, no internal path. */
  function expectUserFacing(message: unknown, minLength = 20): void {
    expect(typeof message).toBe('string');
    const text = message as string;
    expect(text.trim().length).toBeGreaterThanOrEqual(minLength);
    expect(text).not.toContain(API_KEY);
    expect(text).not.toMatch(/\n\s*at\s/);
    expect(text).not.toMatch(/\(?[\w/\\.-]+\.(ts|js):\d+(:\d+)?\)?/);
    expect(text).not.toContain(ROOT);
    expect(text).not.toMatch(/node_modules|\/work\/|\/src\//);
  }

  function expectNoSecrets(events: Event[]): void {
    const text = JSON.stringify(events);
    expect(text).not.toContain(API_KEY);
    // Nor where the provider lives: its host and port, its path.
    expect(text).not.toContain(new URL(server.baseURL).host);
    expect(text).not.toContain('/v1');
    // Per-call reasons may be short ("timed out").
    for (const failed of progress(events, 'failed')) expectUserFacing(failed.error, 5);
  }

  describe('429 bursts with Retry-After', () => {
    it('several models rate-limited at once all succeed after waiting, in bounded calls; a Retry-After past the policy maximum fails at once', async () => {
      const council = ['local/b429-1', 'local/b429-2', 'local/b429-3', 'local/b429-4'];
      for (const model of council) {
        // First attempt: Retry-After in seconds; second: retry-after-ms; third: the answer.
        setRules({
          [model]: ({ kind, kindCallIndex }) =>
            kind !== 'answer'
              ? undefined
              : kindCallIndex === 0
                ? rateLimited(1)
                : kindCallIndex === 1
                  ? rateLimitedMs(200)
                  : undefined,
        });
      }
      setRules({ 'local/b429-wait': always(rateLimited(120)) });
      const jurors = ['local/b429-j1:good', 'local/b429-j2:fair', 'local/b429-j3:good'];
      for (const juror of jurors) setRules({ [juror]: firstCalls(1, rateLimitedMs(300), 'evaluation') });
      setRules({ 'local/b429-fore': firstCalls(1, rateLimitedMs(300), 'foreman') });

      const started = Date.now();
      const [councilRun, juryRun] = await Promise.all([
        stack.run({
          question: 'Rate limits everywhere?',
          councilModels: [...council, 'local/b429-wait'],
          chairmanModel: 'local/b429-chair',
          modeConfig: { timeoutMs: 20_000 },
        }),
        stack.run({
          question: 'Evaluate under rate limits',
          mode: 'jury',
          modeConfig: {
            content: 'A short text to evaluate, rate limited on every juror.',
            jurorModels: jurors,
            foremanModel: 'local/b429-fore',
            timeoutMs: 10_000,
          },
        }),
      ]);
      // Two Retry-After waits (1 s + 0.2 s), not 120 s.
      expect(Date.now() - started).toBeLessThan(15_000);

      // Council: the four rate-limited models answered; the one told to wait 120 s failed at once.
      const councilEvents = councilRun.events as Event[];
      expect(councilEvents.at(-1)?.type).toBe('complete');
      const stage1 = one<{ data: { model: string }[] }>(councilEvents, 'stage1_complete')!.data;
      expect(stage1.map((a) => a.model)).toEqual(council);
      for (const model of council) {
        const answers = callsOf(model).filter((r) => kindOf(r) === 'answer');
        expect(answers).toHaveLength(3);
        expect(answers[1].receivedAt - answers[0].receivedAt).toBeGreaterThanOrEqual(950);
        expect(answers[2].receivedAt - answers[1].receivedAt).toBeGreaterThanOrEqual(180);
        expect(
          progress(councilEvents, 'retrying', 'stage1').filter((e) => e.participant === model),
        ).toHaveLength(2);
      }
      const waitFailed = progress(councilEvents, 'failed', 'stage1').find(
        (e) => e.participant === 'local/b429-wait',
      );
      expect(waitFailed?.error).toMatch(/429/);
      expect(Number(waitFailed?.responseTimeMs)).toBeLessThan(2000);
      // One call per planned call: never retried, never waited for.
      expect(callsOf('local/b429-wait').filter((r) => kindOf(r) === 'answer')).toHaveLength(1);
      expect(callsOf('local/b429-wait').filter((r) => kindOf(r) === 'rank')).toHaveLength(1);

      // Jury: every juror and the foreman were rate limited once and then delivered.
      const juryEvents = juryRun.events as Event[];
      expect(juryEvents.at(-1)?.type).toBe('complete');
      expect(juryEvents.filter((e) => e.type === 'juror_complete')).toHaveLength(3);
      for (const model of [...jurors, 'local/b429-fore']) {
        expect(callsOf(model).filter((r) => kindOf(r) !== 'title')).toHaveLength(2);
      }

      await expectBoundedAndSettled('local/b429-', [...councilEvents, ...juryEvents]);
      expectNoSecrets([...councilEvents, ...juryEvents]);
    }, 30_000);
  });

  describe('a model that fails on every attempt, stalls, or answers garbage', () => {
    it('jury: 5xx on every attempt and a stalled juror are failed jurors, a juror without scores is kept with parseSuccess false, the verdict proceeds', async () => {
      setRules({
        'local/jf-503': always(http(503, 'upstream overloaded')),
        'local/jf-stall': always({ kind: 'stall' }),
        'local/jf-garbage': always(text(GARBAGE_JUROR), 'evaluation'),
      });
      const jurors = [
        'local/jf-ok1:good',
        'local/jf-ok2:fair',
        'local/jf-503',
        'local/jf-stall',
        'local/jf-garbage',
      ];
      const { messageId, events: delivered } = await stack.run({
        question: 'Evaluate with broken jurors',
        mode: 'jury',
        modeConfig: {
          content: 'Content that five jurors will look at, two of them failing.',
          jurorModels: jurors,
          foremanModel: 'local/jf-fore',
        },
      });
      const events = delivered as Event[];
      expect(events.at(-1)?.type).toBe('complete');

      // 03-jury.md §F "Some jurors fail" / "Timeout (Stage 2)": excluded; deviations.md 6: listed as failed.
      const assessed = events
        .filter((e) => e.type === 'juror_complete')
        .map((e) => e.data as Record<string, unknown>);
      expect(assessed.map((a) => a.model).sort()).toEqual([
        'local/jf-garbage',
        'local/jf-ok1:good',
        'local/jf-ok2:fair',
      ]);
      const summary = one<{ data: Record<string, unknown> }>(events, 'all_jurors_complete')!.data as {
        jurorCount: number;
        successfulJurors: number;
        failedJurors: { model: string; reason: string }[];
        dimensionAverages: Record<string, number | null>;
      };
      expect(summary).toMatchObject({ jurorCount: 5, successfulJurors: 3 });
      const reasons = Object.fromEntries(summary.failedJurors.map((f) => [f.model, f.reason]));
      expect(Object.keys(reasons).sort()).toEqual(['local/jf-503', 'local/jf-stall']);
      expect(reasons['local/jf-503']).toMatch(/503/);
      expect(reasons['local/jf-stall']).toBe('timed out');

      // "Score parsing fails for a juror": parseSuccess false, text kept, excluded from the averages.
      const garbage = assessed.find((a) => a.model === 'local/jf-garbage')!;
      expect(garbage).toMatchObject({ parseSuccess: false, assessmentText: GARBAGE_JUROR, verdict: null });
      expect(Object.values(garbage.scores as Record<string, unknown>).every((s) => s === null)).toBe(true);
      const scored = assessed.filter((a) => a.parseSuccess);
      for (const [dimension, average] of Object.entries(summary.dimensionAverages)) {
        const values = scored
          .map((a) => (a.scores as Record<string, number | null>)[dimension])
          .filter((v) => v !== null);
        if (values.length === 0) expect(average).toBeNull();
        else {
          const mean = values.reduce((x, y) => x + (y as number), 0) / values.length;
          expect(average).toBeCloseTo(Math.round(mean * 10) / 10, 5);
        }
      }
      const stored = await stack.stageRows(messageId);
      expect(stored.find((r) => r.model === 'local/jf-garbage')).toMatchObject({
        stage_type: 'deliberation',
        content: GARBAGE_JUROR,
        parsed_data: expect.objectContaining({ parseSuccess: false }),
      });
      expect(stored.filter((r) => r.stage_type === 'deliberation')).toHaveLength(3);

      // The 503 was retried to the limit; the stalled call was abandoned at the timeout, not retried.
      expect(callsOf('local/jf-503')).toHaveLength(POLICY.maxAttempts);
      const stalled = callsOf('local/jf-stall');
      expect(stalled).toHaveLength(1);
      expect(stalled[0].outcome).toBe('client-disconnected');
      const stallFailed = progress(events, 'failed', 'deliberation').find(
        (e) => e.participant === 'local/jf-stall',
      );
      expect(Number(stallFailed?.responseTimeMs)).toBeGreaterThanOrEqual(MODEL_TIMEOUT_MS - 100);
      expect(Number(stallFailed?.responseTimeMs)).toBeLessThan(MODEL_TIMEOUT_MS + 2000);
      await expectBoundedAndSettled('local/jf-', events);
      expectNoSecrets(events);
    }, 30_000);

    it('council: stalled and hung calls time out at modeConfig.timeoutMs, the council carries on; a stalled chairman ends in error with stages 1-2 saved', async () => {
      setRules({
        'local/ct-stall': always({ kind: 'stall', partialBody: '{"id":"chatcmpl-1","choices":[' }),
        'local/ct-hang': always({ kind: 'hang' }),
        'local/ct-chair': always({ kind: 'stall' }, 'synthesis'),
      });
      const timeoutMs = 1500;
      const { messageId, events: delivered } = await stack.run({
        question: 'Who answers in time?',
        councilModels: ['local/ct-ok1', 'local/ct-ok2', 'local/ct-stall', 'local/ct-hang'],
        chairmanModel: 'local/ct-chair',
        modeConfig: { timeoutMs },
      });
      const events = delivered as Event[];

      // 01-council.md §F "Some models fail in Stage 1": the two that answered go on to be ranked.
      const stage1 = one<{ data: { model: string }[] }>(events, 'stage1_complete')!.data;
      expect(stage1.map((a) => a.model)).toEqual(['local/ct-ok1', 'local/ct-ok2']);
      for (const stage of ['stage1', 'stage2']) {
        const failed = progress(events, 'failed', stage);
        expect(failed.map((e) => e.participant).sort()).toEqual(['local/ct-hang', 'local/ct-stall']);
        for (const e of failed) {
          expect(e.error).toBe('timed out');
          expect(Number(e.responseTimeMs)).toBeGreaterThanOrEqual(timeoutMs - 100);
          expect(Number(e.responseTimeMs)).toBeLessThan(timeoutMs + 1500);
        }
      }
      expect(one(events, 'stage2_complete')).toBeDefined();

      // "Chairman model fails in Stage 3": error event, Stage 1 and Stage 2 data still saved.
      const last = events.at(-1)!;
      expect(last.type).toBe('error');
      expect(last.message).toMatch(/chairman model local\/ct-chair failed .*timed out/);
      expectUserFacing(last.message);
      const rows = await stack.stageRows(messageId);
      expect(rows.filter((r) => r.stage_type === 'stage1').map((r) => r.model)).toEqual([
        'local/ct-ok1',
        'local/ct-ok2',
      ]);
      expect(rows.some((r) => r.stage_type === 'stage2')).toBe(true);
      expect(rows.some((r) => r.stage_type === 'stage3')).toBe(false);
      const result = await view(messageId);
      expect(result).toMatchObject({ status: 'failed', error: last.message });

      // Each timed-out call was one request, abandoned by the client (not retried, not left open).
      for (const model of ['local/ct-stall', 'local/ct-hang']) {
        expect(callsOf(model)).toHaveLength(2);
        expect(callsOf(model).map((r) => r.outcome)).toEqual(['client-disconnected', 'client-disconnected']);
      }
      expect(callsOf('local/ct-chair').filter((r) => kindOf(r) === 'synthesis')).toHaveLength(1);
      await expectBoundedAndSettled('local/ct-', events);
      expectNoSecrets(events);
    }, 30_000);

    it('vote: a voter failing with 5xx on every attempt is excluded and counted in invalidVoteCount', async () => {
      setRules({
        'local/vf-4': always(http(502, 'bad gateway'), 'vote'),
        'local/vf-1': always(text('Weighing them all.\n\nVOTE: Response A'), 'vote'),
        'local/vf-2': always(text('VOTE: Response A'), 'vote'),
        'local/vf-3': always(text('Clearly the best:\nVOTE: Response B'), 'vote'),
      });
      const { events: delivered } = await stack.run({
        question: 'Which answer wins?',
        mode: 'vote',
        modeConfig: {
          models: ['local/vf-1', 'local/vf-2', 'local/vf-3', 'local/vf-4'],
          chairmanModel: 'local/vf-chair',
        },
      });
      const events = delivered as Event[];
      expect(events.at(-1)?.type).toBe('complete');
      // It answered in stage 1, so its answer is on the ballot; only its vote is missing.
      expect(one<{ data: unknown[] }>(events, 'stage1_complete')!.data).toHaveLength(4);
      const tally = one<{ data: Record<string, unknown> }>(events, 'vote_complete')!.data;
      expect(tally).toMatchObject({ validVoteCount: 3, invalidVoteCount: 1, isTie: false });
      expect((tally.votes as { model: string }[]).map((v) => v.model).sort()).toEqual([
        'local/vf-1',
        'local/vf-2',
        'local/vf-3',
      ]);
      expect(one(events, 'winner_declared')).toMatchObject({
        data: expect.objectContaining({ voteCount: 2, totalVotes: 3 }),
      });
      expect(callsOf('local/vf-4').filter((r) => kindOf(r) === 'vote')).toHaveLength(POLICY.maxAttempts);
      await expectBoundedAndSettled('local/vf-', events);
      expectNoSecrets(events);
    }, 30_000);

    it('debate: a model failing its revision keeps its original answer (decision null, parseSuccess false) and still votes', async () => {
      setRules({ 'local/df-2': always(http(500, 'internal error'), 'revision') });
      const { messageId, events: delivered } = await stack.run({
        question: 'Debate with a broken reviser',
        mode: 'debate',
        modeConfig: { models: ['local/df-1', 'local/df-2', 'local/df-3'] },
      });
      const events = delivered as Event[];
      expect(events.at(-1)?.type).toBe('complete');
      const round1 = one<{ data: { model: string; response: string }[] }>(events, 'round1_complete')!.data;
      const original = round1.find((a) => a.model === 'local/df-2')!.response;
      const revision = one<{
        data: { revisions: Record<string, unknown>[]; summary: Record<string, number> };
      }>(events, 'revision_complete')!.data;
      expect(revision.revisions.find((r) => r.model === 'local/df-2')).toMatchObject({
        decision: null,
        parseSuccess: false,
        originalResponse: original,
        revisedResponse: original,
      });
      expect(revision.summary.parseFailed).toBeGreaterThanOrEqual(1);
      // "The model still participates in voting."
      const votes = one<{ data: { votes: { model: string }[] } }>(events, 'vote_complete')!.data.votes;
      expect(votes.map((v) => v.model)).toContain('local/df-2');
      expect(callsOf('local/df-2').filter((r) => kindOf(r) === 'revision')).toHaveLength(POLICY.maxAttempts);
      const rows = await stack.stageRows(messageId);
      expect(rows.find((r) => r.stage_type === 'revision' && r.model === 'local/df-2')?.content).toBe(
        original,
      );
      await expectBoundedAndSettled('local/df-', events);
      expectNoSecrets(events);
    }, 30_000);

    it('delphi: a non-numeric estimate is excluded from the round; a panelist failing in round 2 keeps its round-1 estimate', async () => {
      const estimate = (value: string) =>
        text(`ESTIMATE: ${value}\nCONFIDENCE: HIGH\nREASONING: A stated basis.`);
      const byRound =
        (first: ChatBehaviour, later: ChatBehaviour): Rule =>
        ({ kind }) =>
          kind === 'estimate' ? first : kind === 'reestimate' ? later : undefined;
      setRules({
        'local/pf-1': byRound(estimate('1000'), http(503)),
        'local/pf-2': byRound(estimate('3000'), estimate('2000')),
        'local/pf-3': byRound(estimate('9000'), estimate('2000')),
        'local/pf-4': always(
          text('ESTIMATE: impossible to say\nCONFIDENCE: LOW\nREASONING: no basis at all.'),
        ),
      });
      const { messageId, events: delivered } = await stack.run({
        question: 'How many widgets ship this year?',
        mode: 'delphi',
        modeConfig: {
          panelistModels: ['local/pf-1', 'local/pf-2', 'local/pf-3', 'local/pf-4'],
          facilitatorModel: 'local/pf-fac',
          questionType: 'numeric',
          maxRounds: 2,
          timeoutMs: 30_000,
        },
      });
      const events = delivered as Event[];
      expect(events.at(-1)?.type).toBe('complete');
      const rounds = events.filter((e) => e.type === 'round_complete') as (Event & {
        round: number;
        data: {
          estimates: { participantIndex: number; estimate: number; changed: boolean }[];
          stats: { mean: number };
        };
      })[];
      expect(rounds.map((r) => r.round)).toEqual([1, 2]);
      // 05-delphi.md §F "non-numeric answer": excluded from aggregation, three valid estimates suffice.
      expect(rounds[0].data.estimates.map((e) => e.participantIndex)).toEqual([1, 2, 3]);
      expect(rounds[0].data.stats.mean).toBeCloseTo((1000 + 3000 + 9000) / 3);
      const rows = await stack.stageRows(messageId);
      const garbage = rows.find((r) => r.stage_type === 'round_1' && r.model === 'local/pf-4');
      expect(garbage?.parsed_data).toMatchObject({ estimate: null });
      // "A model fails in a later round": previous answer stands, changed: false.
      expect(rounds[1].data.estimates.find((e) => e.participantIndex === 1)).toMatchObject({
        estimate: 1000,
        changed: false,
      });
      expect(progress(events, 'failed', 'round_2').map((e) => e.participant)).toEqual([1]);
      expect(callsOf('local/pf-1').filter((r) => kindOf(r) === 'reestimate')).toHaveLength(
        POLICY.maxAttempts,
      );
      await expectBoundedAndSettled('local/pf-', events);
      expectNoSecrets(events);
    }, 30_000);
  });

  describe('connection resets', () => {
    it('a reset before, right after the headers or halfway through the body is retried; a model that always resets fails in maxAttempts calls and the council carries on', async () => {
      setRules({
        'local/cr-start': firstCalls(2, { kind: 'reset' }, 'answer'),
        'local/cr-headers': firstCalls(1, { kind: 'reset', at: 'headers' }, 'answer'),
        'local/cr-body': firstCalls(1, { kind: 'reset', at: 'body' }, 'answer'),
        'local/cr-always': always({ kind: 'reset', at: 'body' }),
      });
      const models = ['local/cr-start', 'local/cr-headers', 'local/cr-body', 'local/cr-always'];
      const { events: delivered } = await stack.run({
        question: 'Does the connection hold?',
        councilModels: models,
        chairmanModel: 'local/cr-chair',
      });
      const events = delivered as Event[];
      expect(events.at(-1)?.type).toBe('complete');
      const stage1 = one<{ data: { model: string }[] }>(events, 'stage1_complete')!.data;
      expect(stage1.map((a) => a.model)).toEqual(models.slice(0, 3));
      const answers = (model: string) => callsOf(model).filter((r) => kindOf(r) === 'answer');
      expect(answers('local/cr-start').map((r) => r.outcome)).toEqual(['reset', 'reset', 'answered']);
      expect(answers('local/cr-headers').map((r) => r.outcome)).toEqual(['reset', 'answered']);
      expect(answers('local/cr-body').map((r) => r.outcome)).toEqual(['reset', 'answered']);
      expect(answers('local/cr-always')).toHaveLength(POLICY.maxAttempts);
      const failed = progress(events, 'failed', 'stage1');
      expect(failed.map((e) => e.participant)).toEqual(['local/cr-always']);
      expect(failed[0].error).toMatch(/Network error .*ECONNRESET/);
      expect(
        progress(events, 'retrying', 'stage1')
          .map((e) => e.participant)
          .sort(),
      ).toEqual([
        'local/cr-always',
        'local/cr-always',
        'local/cr-body',
        'local/cr-headers',
        'local/cr-start',
        'local/cr-start',
      ]);
      await expectBoundedAndSettled('local/cr-', events);
      expectNoSecrets(events);
    }, 30_000);
  });

  describe('errors inside a 200, empty and garbage text', () => {
    it('council: an error body is retried only when its code is transient, empty or non-JSON answers fail the call, unparseable rankings leave empty aggregate rankings and synthesis proceeds', async () => {
      setRules({
        'local/ce-transient': firstCalls(
          1,
          { kind: 'error-body', code: 502, message: 'Provider returned error' },
          'answer',
        ),
        'local/ce-refused': always(
          { kind: 'error-body', code: 400, message: 'Invalid request', withErroredChoice: true },
          'answer',
        ),
        'local/ce-empty': always(text(''), 'answer'),
        'local/ce-html': always(
          {
            kind: 'raw',
            status: 200,
            headers: { 'content-type': 'text/html' },
            body: '<html>Bad gateway</html>',
          },
          'answer',
        ),
        'local/ce-truncated': always(
          {
            kind: 'raw',
            status: 200,
            headers: { 'content-type': 'application/json' },
            body: '{"choices":[{"message":',
          },
          'answer',
        ),
      });
      const models = [
        'local/ce-ok',
        'local/ce-transient',
        'local/ce-refused',
        'local/ce-empty',
        'local/ce-html',
        'local/ce-truncated',
      ];
      for (const model of models) {
        const previous = rules.get(model);
        setRules({ [model]: (call) => (call.kind === 'rank' ? text(GARBAGE_RANKING) : previous?.(call)) });
      }
      const { messageId, events: delivered } = await stack.run({
        question: 'Which provider answers properly?',
        councilModels: models,
        chairmanModel: 'local/ce-chair',
      });
      const events = delivered as Event[];
      expect(events.at(-1)?.type).toBe('complete');
      const stage1 = one<{ data: { model: string }[] }>(events, 'stage1_complete')!.data;
      expect(stage1.map((a) => a.model)).toEqual(['local/ce-ok', 'local/ce-transient']);
      const answers = (model: string) => callsOf(model).filter((r) => kindOf(r) === 'answer');
      expect(answers('local/ce-transient')).toHaveLength(2);
      for (const model of ['local/ce-refused', 'local/ce-empty', 'local/ce-html', 'local/ce-truncated']) {
        expect(answers(model)).toHaveLength(1);
      }
      const errors = Object.fromEntries(
        progress(events, 'failed', 'stage1').map((e) => [e.participant, e.error]),
      );
      expect(errors).toEqual({
        // The provider's own words ("Invalid request") are its, not ours: they go to the log only.
        'local/ce-refused': 'Error in response body from the openai-compatible provider (code 400)',
        'local/ce-empty': expect.stringMatching(/empty content/),
        'local/ce-html': expect.stringMatching(/not a JSON object/),
        'local/ce-truncated': expect.stringMatching(/not valid JSON/),
      });

      // 01-council.md §F "Ranking parsing fails" / "All rankings parse as empty".
      const stage2 = one<{ data: { parsedRanking: string[] }[]; metadata: { aggregateRankings: unknown[] } }>(
        events,
        'stage2_complete',
      )!;
      expect(stage2.data).toHaveLength(models.length);
      expect(stage2.data.every((r) => r.parsedRanking.length === 0)).toBe(true);
      expect(stage2.metadata.aggregateRankings).toEqual([]);
      expect(one(events, 'stage3_complete')).toBeDefined();
      const rows = await stack.stageRows(messageId);
      expect(
        rows.filter((r) => r.stage_type === 'stage2').every((r) => r.parsed_data?.parseSuccess === false),
      ).toBe(true);
      await expectBoundedAndSettled('local/ce-', events);
      expectNoSecrets(events);
    }, 30_000);
  });

  describe('every model fails', () => {
    it('council: an error event that names what happened, with no stack trace, API key or internal path', async () => {
      setRules({
        'local/ca-500': always(http(500, `Incorrect API key provided: ${API_KEY}. Check your key.`)),
        'local/ca-reset': always({ kind: 'reset' }),
        'local/ca-400': always(http(400, 'model not found')),
      });
      const { messageId, events: delivered } = await stack.run({
        question: 'Is anyone there?',
        councilModels: ['local/ca-500', 'local/ca-reset', 'local/ca-400'],
        chairmanModel: 'local/ca-chair',
      });
      const events = delivered as Event[];
      const last = events.at(-1)!;
      expect(last.type).toBe('error');
      expect(last.message).toMatch(/^All council models failed to answer/);
      for (const model of ['local/ca-500', 'local/ca-reset', 'local/ca-400'])
        expect(last.message).toContain(model);
      expectUserFacing(last.message);
      expect(events.some((e) => e.type === 'stage1_complete')).toBe(false);
      expect(await stack.stageRows(messageId)).toEqual([]);
      expect(await view(messageId)).toMatchObject({ status: 'failed', error: last.message });
      expect(callsOf('local/ca-500')).toHaveLength(POLICY.maxAttempts);
      expect(callsOf('local/ca-reset')).toHaveLength(POLICY.maxAttempts);
      expect(callsOf('local/ca-400')).toHaveLength(1);
      await expectBoundedAndSettled('local/ca-', events);
      expectNoSecrets(events);
    }, 30_000);

    it('jury: "All juror evaluations failed."; a failing foreman is an error with the juror data saved', async () => {
      setRules({
        'local/ja-1': always(http(503)),
        'local/ja-2': always({ kind: 'reset', at: 'headers' }),
        'local/ja-3': always({ kind: 'error-body', code: 'upstream_error' }),
        'local/jb-fore': always(http(500, 'foreman is down'), 'foreman'),
      });
      const all = await stack.run({
        question: 'Evaluate with nobody',
        mode: 'jury',
        modeConfig: {
          content: 'Nobody will evaluate this.',
          jurorModels: ['local/ja-1', 'local/ja-2', 'local/ja-3'],
          foremanModel: 'local/ja-fore',
        },
      });
      const allEvents = all.events as Event[];
      expect(allEvents.at(-1)).toMatchObject({ type: 'error', message: 'All juror evaluations failed.' });
      expect(allEvents.some((e) => e.type === 'juror_complete')).toBe(false);
      expect((await stack.stageRows(all.messageId)).map((r) => r.stage_type)).toEqual(['present']);
      await expectBoundedAndSettled('local/ja-', allEvents);

      const foreman = await stack.run({
        question: 'Evaluate with a broken foreman',
        mode: 'jury',
        modeConfig: {
          content: 'Three jurors will read this; the foreman will not report.',
          jurorModels: ['local/jb-1:good', 'local/jb-2:fair', 'local/jb-3:good'],
          foremanModel: 'local/jb-fore',
        },
      });
      const foremanEvents = foreman.events as Event[];
      expect(foremanEvents.some((e) => e.type === 'all_jurors_complete')).toBe(true);
      const last = foremanEvents.at(-1)!;
      expect(last.type).toBe('error');
      expect(last.message).toMatch(/foreman model local\/jb-fore failed/);
      expectUserFacing(last.message);
      const types = (await stack.stageRows(foreman.messageId)).map((r) => r.stage_type);
      expect(types.filter((t) => t === 'deliberation')).toHaveLength(3);
      expect(types).toContain('juror_summary');
      expect(types).not.toContain('verdict');
      expect(callsOf('local/jb-fore').filter((r) => kindOf(r) === 'foreman')).toHaveLength(
        POLICY.maxAttempts,
      );
      await expectBoundedAndSettled('local/jb-', foremanEvents);
      expectNoSecrets([...allEvents, ...foremanEvents]);
    }, 30_000);

    it('debate: every model failing in stage 1 is an error and no stage rows are saved', async () => {
      setRules({
        'local/da-1': always(http(502)),
        'local/da-2': always({ kind: 'stall' }),
        'local/da-3': always(text('')),
      });
      const { messageId, events: delivered } = await stack.run({
        question: 'Debate with nobody',
        mode: 'debate',
        modeConfig: { models: ['local/da-1', 'local/da-2', 'local/da-3'] },
      });
      const events = delivered as Event[];
      const last = events.at(-1)!;
      expect(last.type).toBe('error');
      expect(last.message).toMatch(/^All debate models failed to answer/);
      expect(last.message).toContain('timed out');
      expectUserFacing(last.message);
      expect(await stack.stageRows(messageId)).toEqual([]);
      expect(await view(messageId)).toMatchObject({ status: 'failed', error: last.message });
      await expectBoundedAndSettled('local/da-', events);
      expectNoSecrets(events);
    }, 30_000);
  });
});
