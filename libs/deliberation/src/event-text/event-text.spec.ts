import { SimulatedProvider } from '@conclave/llm';
import {
  MODE_NAMES,
  type DeliveredEvent,
  type ModeEventPayloads,
  type ModeName,
  type SharedEventPayloads,
  type TypedEventOf,
} from '@conclave/contracts';
import { StageRunner } from '../engine/stage-runner';
import type { ModeDefaults } from '../engine/types';
import { modeDefinition, SIMULATED_FALLBACK, SIMULATED_RESPONDERS } from '../modes';
import { MemoryStore } from '../testing/memory-store';
import {
  AUDIENCES,
  describeEvent,
  describeLine,
  MODE_EVENT_TEXT,
  readingOf,
  sharedEventText,
  type Audience,
} from '.';

/** One event of every type of a payload table: a type added to the contracts makes this not compile. */
type Samples<Table> = { [T in keyof Table & string]: TypedEventOf<Table, T> };

const env = { messageId: 'm1', seq: 1, at: '2026-01-01T00:00:00.000Z' };
const answers = [
  { model: 'sim/a', response: 'A', responseTimeMs: 10 },
  { model: 'sim/b', response: 'B', responseTimeMs: 20 },
];
const numeric = {
  mean: 10.456,
  median: 12345.678,
  stdDev: 1,
  min: 0.5,
  max: 99999,
  cv: 0.1234,
  cvUndefined: false,
  highVariance: false,
  confidenceCounts: { low: 0, medium: 1, high: 2 },
};
const votes = {
  votes: [
    { model: 'sim/a', voteText: '', votedFor: 'Response B', responseTimeMs: 1 },
    { model: 'sim/b', voteText: '', votedFor: null, responseTimeMs: 1 },
  ],
  tallies: { 'Response A': 1, 'Response B': 1 },
  validVoteCount: 1,
  invalidVoteCount: 1,
  isTie: true,
  tiedLabels: ['Response A', 'Response B'],
};

const SAMPLES: { [M in ModeName]: Samples<ModeEventPayloads[M]> } = {
  council: {
    stage1_start: { ...env, type: 'stage1_start', conversationId: 'c1' },
    stage1_complete: { ...env, type: 'stage1_complete', data: answers },
    stage2_start: { ...env, type: 'stage2_start' },
    stage2_complete: {
      ...env,
      type: 'stage2_complete',
      data: [],
      metadata: {
        labelToModel: {},
        aggregateRankings: [
          { model: 'sim/a', averageRank: 1.3333, rankingsCount: 2 },
          { model: 'sim/b', averageRank: 2, rankingsCount: 2 },
        ],
      },
    },
    stage3_start: { ...env, type: 'stage3_start' },
    stage3_complete: {
      ...env,
      type: 'stage3_complete',
      data: { model: 'sim/chair', response: 'S', responseTimeMs: 3 },
    },
  },
  vote: {
    vote_session_start: { ...env, type: 'vote_session_start', conversationId: 'c1', mode: 'vote' },
    stage1_start: { ...env, type: 'stage1_start' },
    stage1_complete: { ...env, type: 'stage1_complete', data: answers },
    vote_start: { ...env, type: 'vote_start', data: { labelMap: { 'Response A': 'sim/a' } } },
    vote_complete: { ...env, type: 'vote_complete', data: votes },
    tiebreak_start: { ...env, type: 'tiebreak_start' },
    tiebreak_complete: {
      ...env,
      type: 'tiebreak_complete',
      data: { model: 'sim/chair', chosenLabel: 'Response B', voteText: '', method: 'chairman' },
    },
    winner_declared: {
      ...env,
      type: 'winner_declared',
      data: {
        winnerLabel: 'Response B',
        winnerModel: 'sim/b',
        winnerResponse: 'B',
        voteCount: 1,
        totalVotes: 2,
        tiebroken: true,
        tiebreakerMethod: 'chairman',
      },
    },
  },
  jury: {
    jury_start: { ...env, type: 'jury_start', conversationId: 'c1', mode: 'jury' },
    present_start: { ...env, type: 'present_start' },
    present_complete: { ...env, type: 'present_complete', data: { content: 'Text' } },
    deliberation_start: { ...env, type: 'deliberation_start' },
    juror_complete: {
      ...env,
      type: 'juror_complete',
      data: {
        model: 'sim/j1',
        assessmentText: '',
        scores: { accuracy: 8, completeness: 7, clarity: 9, relevance: 8, actionability: 6 },
        average: 7.6,
        verdict: 'APPROVE',
        recommendations: [],
        responseTimeMs: 5,
        parseSuccess: true,
      },
    },
    all_jurors_complete: {
      ...env,
      type: 'all_jurors_complete',
      data: {
        jurorCount: 3,
        successfulJurors: 2,
        majorityVerdict: 'APPROVE',
        voteTally: { approve: 2, revise: 0, reject: 0 },
        dimensionAverages: { accuracy: 8, completeness: 7, clarity: 9, relevance: 8, actionability: 6 },
        dimensionRanges: {
          accuracy: { min: 8, max: 8 },
          completeness: { min: 7, max: 7 },
          clarity: { min: 9, max: 9 },
          relevance: { min: 8, max: 8 },
          actionability: { min: 6, max: 6 },
        },
        failedJurors: [{ model: 'sim/j3', reason: 'timed out' }],
      },
    },
    verdict_start: { ...env, type: 'verdict_start' },
    verdict_complete: {
      ...env,
      type: 'verdict_complete',
      data: {
        model: 'sim/f',
        reportText: '',
        finalVerdict: 'REVISE',
        dimensionAnalysis: [],
        keyStrengths: [],
        keyWeaknesses: [],
        recommendations: [],
        dissentingOpinions: [],
        responseTimeMs: 3,
      },
    },
  },
  debate: {
    debate_start: { ...env, type: 'debate_start', conversationId: 'c1', mode: 'debate' },
    round1_start: { ...env, type: 'round1_start' },
    round1_complete: { ...env, type: 'round1_complete', data: answers },
    revision_start: { ...env, type: 'revision_start', data: { labelMap: {} } },
    revision_complete: {
      ...env,
      type: 'revision_complete',
      data: {
        revisions: [
          { model: 'sim/a', decision: 'STAND' },
          { model: 'sim/b', decision: 'MERGE' },
        ].map((r) => ({
          ...r,
          decision: r.decision as 'STAND' | 'MERGE',
          reasoning: null,
          originalResponse: '',
          revisedResponse: '',
          originalWordCount: 0,
          revisedWordCount: 0,
          responseTimeMs: 1,
          parseSuccess: true,
        })),
        summary: { totalModels: 2, revised: 0, stood: 1, merged: 1, parseFailed: 0 },
      },
    },
    vote_start: { ...env, type: 'vote_start', data: { revisedLabelMap: {} } },
    vote_complete: { ...env, type: 'vote_complete', data: { ...votes, revisedLabelToModel: {} } },
    winner_declared: {
      ...env,
      type: 'winner_declared',
      data: {
        winnerLabel: 'Revised A',
        winnerModel: 'sim/a',
        winnerResponse: 'A',
        winnerDecision: 'STAND',
        voteCount: 2,
        totalVotes: 2,
        tiebroken: false,
      },
    },
  },
  delphi: {
    delphi_start: { ...env, type: 'delphi_start', conversationId: 'c1', questionType: null },
    classify_complete: {
      ...env,
      type: 'classify_complete',
      data: { type: 'qualitative', options: ['Yes', 'No'], reasoning: '' },
    },
    round_start: { ...env, type: 'round_start', round: 2 },
    round_complete: {
      ...env,
      type: 'round_complete',
      round: 2,
      data: {
        estimates: [
          { participantIndex: 1, estimate: 3, confidence: 'LOW', changed: false },
          { participantIndex: 2, estimate: 4, confidence: 'HIGH', changed: true },
        ],
        stats: numeric,
        converged: true,
      },
    },
    convergence_reached: { ...env, type: 'convergence_reached', round: 2, stats: numeric },
    max_rounds_reached: { ...env, type: 'max_rounds_reached', round: 5, stats: numeric },
    synthesis_start: { ...env, type: 'synthesis_start' },
    synthesis_complete: {
      ...env,
      type: 'synthesis_complete',
      data: {
        facilitatorModel: 'sim/f',
        report: '',
        totalRounds: 2,
        converged: true,
        finalValue: 12.3456,
        responseTimeMs: 1,
      },
    },
  },
};

const SHARED: Samples<SharedEventPayloads> = {
  model_progress: {
    ...env,
    type: 'model_progress',
    stage: 'stage2',
    participant: 'sim/a',
    state: 'succeeded',
    responseTimeMs: 1234,
  },
  cancelled: { ...env, type: 'cancelled', reason: 'Cancelled by the user.' },
  resumed: { ...env, type: 'resumed', stage: 'round_2', reason: 'worker_lost', message: 'x' },
  title_complete: { ...env, type: 'title_complete', data: { title: 'A title' } },
  complete: { ...env, type: 'complete' },
  error: { ...env, type: 'error', message: 'The chairman failed.' },
};

/** Each audience's lines, in AUDIENCES order (cli, mcp, reasoning, web). */
type Expected = [cli: string | null, mcp: string | null, reasoning: string[], web: string | null];

/** How every event of every mode reads, for every audience (the CLI, MCP, /v1 and web texts of before). */
const READS: { [M in ModeName]: { [T in keyof ModeEventPayloads[M]]: Expected } } = {
  council: {
    stage1_start: [
      '[stage1] started',
      'stage1 started',
      ['Stage 1: each council member answers the question.'],
      null,
    ],
    stage1_complete: [
      '[stage1] complete: 2 answers',
      'stage1 complete: 2 answers',
      ['2 answers collected.'],
      null,
    ],
    stage2_start: [
      '[stage2] started',
      'stage2 started',
      ['Stage 2: each member ranks the answers, anonymised as Response A, B, …'],
      null,
    ],
    stage2_complete: [
      '[stage2] complete: sim/a 1.33, sim/b 2',
      'stage2 complete: average ranks sim/a 1.33, sim/b 2',
      ['Aggregate ranking: 1. sim/a (average rank 1.333), 2. sim/b (average rank 2).'],
      null,
    ],
    stage3_start: [
      '[stage3] started',
      'stage3 started',
      ['Stage 3: the chairman writes the synthesis.'],
      null,
    ],
    stage3_complete: [
      '[stage3] complete: synthesis by sim/chair',
      'stage3 complete: synthesis by sim/chair',
      [],
      null,
    ],
  },
  vote: {
    vote_session_start: [
      null,
      null,
      ['Vote: each model answers, then every model votes for the best anonymised answer.'],
      null,
    ],
    stage1_start: ['[stage1] started', 'stage1 started', [], null],
    stage1_complete: [
      '[stage1] complete: 2 answers',
      'stage1 complete: 2 answers',
      ['2 answers collected.'],
      null,
    ],
    vote_start: ['[vote] started', 'vote started', ['Voting on the anonymised answers.'], null],
    vote_complete: [
      '[vote] complete: Response A 1, Response B 1 (tie: Response A, Response B)',
      'vote complete: Response A 1, Response B 1 (tie: Response A, Response B)',
      ['Votes: sim/a → Response B, sim/b → no valid vote.', 'Tie between Response A, Response B.'],
      null,
    ],
    tiebreak_start: [
      '[tiebreak] started',
      'tiebreak started',
      ['The vote is tied: a tiebreak decides.'],
      null,
    ],
    tiebreak_complete: [
      '[tiebreak] complete: Response B (chairman)',
      'tiebreak complete: Response B (chairman)',
      ['Tiebreak (chairman): Response B.'],
      null,
    ],
    winner_declared: [
      'winner: sim/b (Response B, 1/2 votes, tie broken chairman)',
      'winner: sim/b (Response B, 1/2 votes)',
      ['Winner: Response B by sim/b (1 of 2 votes, after a tiebreak).'],
      null,
    ],
  },
  jury: {
    jury_start: [
      null,
      null,
      ['Jury: each juror scores the content on five dimensions and gives a verdict; the foreman reports.'],
      null,
    ],
    present_start: ['[present] started', 'present started', [], null],
    present_complete: ['[present] complete', 'present complete', [], null],
    deliberation_start: [
      '[deliberation] started',
      'deliberation started',
      ['The jurors assess the content.'],
      null,
    ],
    juror_complete: [
      '[deliberation] juror sim/j1: APPROVE (average 7.6)',
      'juror sim/j1: APPROVE (average 7.6)',
      ['sim/j1: APPROVE, average score 7.6/10.'],
      null,
    ],
    all_jurors_complete: [
      '[deliberation] complete: majority APPROVE (approve 2, revise 0, reject 0)',
      'jurors complete: majority APPROVE (approve 2, revise 0, reject 0)',
      ['Jurors: 2 APPROVE, 0 REVISE, 0 REJECT (majority APPROVE).', '1 juror failed.'],
      null,
    ],
    verdict_start: ['[verdict] started', 'verdict started', ['The foreman writes the verdict report.'], null],
    verdict_complete: [
      '[verdict] complete: REVISE (foreman sim/f)',
      'verdict complete: REVISE (foreman sim/f)',
      ['Final verdict: REVISE.'],
      null,
    ],
  },
  debate: {
    debate_start: [
      null,
      null,
      ['Debate: opening answers, a revision round in which each model reads the others, then a vote.'],
      null,
    ],
    round1_start: ['[round1] started', 'round1 started', ['Round 1: each model answers.'], null],
    round1_complete: [
      '[round1] complete: 2 answers',
      'round1 complete: 2 answers',
      ['2 answers collected.'],
      null,
    ],
    revision_start: [
      '[revision] started',
      'revision started',
      ["Revision round: each model revises, stands by or merges its answer after reading the others'."],
      null,
    ],
    revision_complete: [
      '[revision] complete: 0 revised, 1 stood, 1 merged',
      'revision complete: 0 revised, 1 stood, 1 merged',
      ['Revisions: sim/a stood by its answer, sim/b merged answers.'],
      null,
    ],
    vote_start: [
      '[vote] started',
      'vote started',
      ['Vote: each model votes for the best revised answer.'],
      null,
    ],
    vote_complete: [
      '[vote] complete: Response A 1, Response B 1 (tie: Response A, Response B)',
      'vote complete: Response A 1, Response B 1 (tie: Response A, Response B)',
      ['Votes: sim/a → Response B, sim/b → no valid vote.', 'Tie between Response A, Response B.'],
      null,
    ],
    winner_declared: [
      'winner: sim/a (Revised A, 2/2 votes)',
      'winner: sim/a (Revised A, 2/2 votes)',
      ['Winner: Revised A by sim/a (2 of 2 votes).'],
      null,
    ],
  },
  delphi: {
    delphi_start: [
      null,
      null,
      ['Delphi: an anonymous panel estimates in rounds, seeing only the statistics of the last one.'],
      null,
    ],
    classify_complete: [
      '[classify] complete: qualitative question (Yes | No)',
      'classified as a qualitative question',
      ['Question classified as qualitative (options: Yes, No).'],
      null,
    ],
    round_start: ['[round 2] started', 'round 2 started', ['Round 2: the panelists estimate.'], null],
    round_complete: [
      '[round 2] complete: median 12345.68, mean 10.46, cv 0.12, converged',
      'round 2 complete: median 12345.68, cv 0.12',
      ['Round 2: 2 estimates, median 12,346 (range 0.5–99,999, coefficient of variation 0.123).'],
      null,
    ],
    convergence_reached: [
      'converged in round 2',
      'converged in round 2',
      ['The panel converged in round 2.'],
      null,
    ],
    max_rounds_reached: [
      'no convergence by round 5',
      'no convergence by round 5',
      ['No convergence after 5 rounds: the last round stands.'],
      null,
    ],
    synthesis_start: [
      '[synthesis] started',
      'synthesis started',
      ['The facilitator writes the report.'],
      null,
    ],
    synthesis_complete: [
      '[synthesis] complete: final value 12.35 (facilitator sim/f)',
      'synthesis complete: the facilitator wrote the report',
      [],
      null,
    ],
  },
};

const SHARED_READS: { [T in keyof SharedEventPayloads]: Expected } = {
  model_progress: [
    '[stage2] sim/a succeeded (1234 ms)',
    'stage2: sim/a answered',
    ['sim/a ranked the anonymised answers (1.2 s).'],
    null,
  ],
  cancelled: [null, 'cancelled: Cancelled by the user.', [], null],
  resumed: [
    '[round 2] resuming (the worker running it stopped)',
    'resuming round_2 (the worker running it stopped)',
    ['Resuming round_2 (the worker running it stopped).'],
    'Resuming round_2 (the worker running it stopped).',
  ],
  title_complete: ['title: A title', 'title written', [], null],
  complete: ['complete', 'complete', [], null],
  error: [null, 'failed: The chairman failed.', [], null],
};

const readAll = (event: DeliveredEvent, mode: ModeName | null): Expected => [
  describeLine(event, 'cli', { mode }),
  describeLine(event, 'mcp', { mode }),
  describeEvent(event, 'reasoning', { mode }),
  describeLine(event, 'web', { mode }),
];

const ownKeys = (table: object) => Object.keys(table).sort();

describe('the event describer', () => {
  it('has a text for every event type of every mode, and for the events every mode sends', () => {
    // The types make a missing text a compile error (EventTextTable); this says so at run time too.
    for (const mode of MODE_NAMES) {
      expect([mode, ownKeys(MODE_EVENT_TEXT[mode].events)]).toEqual([mode, ownKeys(SAMPLES[mode])]);
      expect([mode, ownKeys(READS[mode])]).toEqual([mode, ownKeys(SAMPLES[mode])]);
      for (const event of Object.values(SAMPLES[mode]) as DeliveredEvent[]) {
        const reading = MODE_EVENT_TEXT[mode].events[event.type as never];
        expect([mode, event.type, AUDIENCES.filter((a) => reading[a] === undefined)]).toEqual([
          mode,
          event.type,
          [],
        ]);
      }
    }
    expect(ownKeys(sharedEventText)).toEqual(ownKeys(SHARED));
  });

  it.each(MODE_NAMES)('reads each %s event for each audience', (mode) => {
    for (const [type, event] of Object.entries(SAMPLES[mode]) as [string, DeliveredEvent][]) {
      const expected = (READS[mode] as Record<string, Expected>)[type];
      expect([type, readAll(event, mode)]).toEqual([type, expected]);
      // The CLI, MCP and the web read by type, without the mode: the same words.
      const [cli, mcp, , web] = readAll(event, null);
      expect([type, cli, mcp, web]).toEqual([type, expected[0], expected[1], expected[3]]);
    }
  });

  it('reads the events every mode sends the same in every mode', () => {
    for (const mode of [null, ...MODE_NAMES])
      for (const [type, event] of Object.entries(SHARED) as [string, DeliveredEvent][])
        expect([mode, type, readAll(event, mode)]).toEqual([
          mode,
          type,
          (SHARED_READS as Record<string, Expected>)[type],
        ]);
  });

  it('gives a stage event no mode declares a plain line for the CLI and MCP, none for /v1 and the web', () => {
    const event = { ...env, type: 'round_7_complete' };
    expect(readAll(event, null)).toEqual(['[round 7] complete', 'round 7 complete', [], null]);
    expect(readAll({ ...env, type: 'something_else' }, 'council')).toEqual([null, null, [], null]);
    // Not an inherited property either.
    expect(readingOf('constructor')).toBeUndefined();
    expect(readAll({ ...env, type: 'toString' }, 'vote')).toEqual([null, null, [], null]);
  });

  it("words a call per audience: who (a model, or a panelist's number) and what its stage's call did", () => {
    const call = (stage: string, participant: string | number, state: string, extra = {}) =>
      ({ ...env, type: 'model_progress', stage, participant, state, ...extra }) as DeliveredEvent;
    const failed = call('round_2', 3, 'failed', { error: 'sim/secret: HTTP 500' });
    expect(describeLine(failed, 'cli')).toBe('[round 2] #3 failed: sim/secret: HTTP 500');
    expect(describeLine(failed, 'mcp', { count: '(1/3)' })).toBe(
      'round 2: participant #3 failed (1/3): sim/secret: HTTP 500',
    );
    // Delphi panelists' error texts may name the model: /v1 leaves them out.
    expect(describeEvent(failed, 'reasoning', { mode: 'delphi' })).toEqual(['Panelist 3 failed.']);
    expect(describeEvent(call('round_2', 3, 'succeeded'), 'reasoning', { mode: 'delphi' })).toEqual([
      'Panelist 3 estimated.',
    ]);
    expect(describeEvent(call('verdict', 'sim/f', 'succeeded'), 'reasoning', { mode: 'jury' })).toEqual([
      'sim/f wrote the verdict report.',
    ]);
    // The final stage's text is streamed as written: no line for its call.
    expect(
      describeEvent(call('verdict', 'sim/f', 'succeeded'), 'reasoning', {
        mode: 'jury',
        finalStage: 'verdict',
      }),
    ).toEqual([]);
    expect(describeLine(call('stage1', 'sim/a', 'started'), 'mcp')).toBeNull();
    expect(describeLine(call('stage1', 'sim/a', 'started'), 'cli')).toBe('[stage1] sim/a started');
  });

  it.each(MODE_NAMES)(
    'has a reading, in its own texts or the shared ones, for every event a simulated %s deliberation sends',
    async (mode) => {
      const events = await simulatedRun(mode);
      expect(events.length).toBeGreaterThan(3);
      const types = new Set(events.map((e) => e.type));
      const own = (table: object, type: string) => Object.prototype.hasOwnProperty.call(table, type);
      const missing = [...types].filter(
        (type) => !own(MODE_EVENT_TEXT[mode].events, type) && !own(sharedEventText, type),
      );
      expect(missing).toEqual([]);
      for (const event of events)
        for (const audience of AUDIENCES) {
          const context = { mode, count: '(1/1)' };
          expect(() => describeEvent(event, audience as Audience, context)).not.toThrow();
        }
    },
  );
});

const DEFAULTS: ModeDefaults = {
  timeoutMs: 10_000,
  council: { councilModels: ['sim/a', 'sim/b', 'sim/c'], chairmanModel: 'sim/chair' },
  jury: { jurorModels: ['sim/a', 'sim/b', 'sim/c'], foremanModel: 'sim/f' },
  debate: { models: ['sim/a', 'sim/b', 'sim/c'] },
  delphi: { panelistModels: ['sim/a', 'sim/b', 'sim/c'], facilitatorModel: 'sim/f' },
  vote: { models: ['sim/a', 'sim/b', 'sim/c'] },
};

/** The stored events of a whole deliberation of `mode` on the simulated provider, in memory. */
async function simulatedRun(mode: ModeName): Promise<DeliveredEvent[]> {
  const definition = modeDefinition(mode);
  if (!definition) throw new Error(`${mode} is not registered`);
  const resolved = definition.resolveConfig(
    { question: 'How many?', modeConfig: mode === 'jury' ? { content: 'Some content' } : {} },
    DEFAULTS,
  );
  if (!resolved.ok) throw new Error(JSON.stringify(resolved.fields));
  const store = new MemoryStore('How many?', resolved.config, { mode, stage: definition.firstStage });
  const stages: string[] = [definition.firstStage];
  const runner = new StageRunner(
    modeDefinition,
    store,
    new SimulatedProvider({
      responders: SIMULATED_RESPONDERS,
      fallback: SIMULATED_FALLBACK,
      latencyMs: 0,
      seed: 'event-text',
    }),
    { publish: async () => undefined },
    {
      enqueueStage: async (_id, stage) => {
        stages.push(stage);
      },
      stageJobState: async () => 'pending',
      rescheduleStage: async () => undefined,
    },
    { historyTurns: 0, deliberationCapMs: 600_000 },
  );
  for (let i = 0; i < stages.length && i < 20; i++) await runner.runStage('m1', stages[i]);
  expect(store.state.status).toBe('complete');
  return store.events as DeliveredEvent[];
}
