/**
 * The fixed list of simulated deliberations the replay comparison records (see record.ts). Each
 * scenario is a request body of POST /api/deliberations, or a `kind` with its own steps
 * (a follow-up turn, a cancel, a batch). Simulated model ids and their directives:
 * libs/llm/src/simulated/directives.ts; the edge cases: the tables of /spec 01–05.
 *
 * Keep names stable: a recording is compared scenario by scenario, by name.
 *
 * Where several members of one stage fail or answer unreadably, later ones carry `delay150`,
 * `delay300`: the API lists missing members (`degraded`, `partial`) in the order their calls
 * settled, and without a gap that order is a race.
 */

export interface DeliberationScenario {
  name: string;
  kind?: 'deliberation';
  body: Record<string, unknown>;
}

export interface FollowUpScenario {
  name: string;
  kind: 'follow-up';
  /** The first turn; each later one is sent with the conversation's id. */
  turns: Record<string, unknown>[];
}

export interface CancelScenario {
  name: string;
  kind: 'cancel';
  body: Record<string, unknown>;
  /** Cancelled once this many `model_progress` `started` events are stored (then a short settle). */
  startedCalls: number;
}

export interface BatchScenario {
  name: string;
  kind: 'batch';
  body: Record<string, unknown>;
}

export type Scenario = DeliberationScenario | FollowUpScenario | CancelScenario | BatchScenario;

/** A straggler the quorum or a deadline cuts (it would answer after 20 s). */
const STRAGGLER = 'sim/x:delay20000';
const JURY_CONTENT =
  '## GET /api/users\n\nReturns a list of users. Accepts optional query parameters:\n' +
  '- `limit` (number): Maximum results to return\n- `offset` (number): Pagination offset\n\n' +
  'Response: 200 OK with JSON array of user objects.';
const NUMERIC_Q = 'How many software engineers will be employed globally by 2030?';
const QUALITATIVE_Q = 'Should our company adopt a monorepo or polyrepo strategy?';

const council = (councilModels: string[], extra: Record<string, unknown> = {}) => ({
  question: 'Which message queue should a small team use?',
  councilModels,
  chairmanModel: 'sim/chair',
  ...extra,
});
const vote = (models: string[], extra: Record<string, unknown> = {}) => ({
  question: 'Which database should a small SaaS start with?',
  mode: 'vote',
  modeConfig: { models, ...extra },
});
const jury = (jurorModels: string[], extra: Record<string, unknown> = {}) => ({
  question: 'Is this API documentation complete?',
  mode: 'jury',
  modeConfig: { content: JURY_CONTENT, jurorModels, foremanModel: 'sim/f', ...extra },
});
const debate = (models: string[], extra: Record<string, unknown> = {}) => ({
  question: 'Should companies adopt a 4-day work week?',
  mode: 'debate',
  modeConfig: { models, ...extra },
});
const delphi = (question: string, modeConfig: Record<string, unknown> = {}) => ({
  question,
  mode: 'delphi',
  modeConfig: {
    panelistModels: ['sim/p1', 'sim/p2', 'sim/p3', 'sim/p4'],
    facilitatorModel: 'sim/f',
    ...modeConfig,
  },
});

export const SCENARIOS: Scenario[] = [
  // ---- council (01-council.md)
  { name: 'council: three members, every stage', body: council(['sim/a', 'sim/b', 'sim/c']) },
  { name: 'council: the default roster', body: { question: 'What is a good first programming language?' } },
  {
    name: 'council: roster in modeConfig',
    body: {
      question: 'Tabs or spaces?',
      mode: 'council',
      modeConfig: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c', timeoutMs: 5000 },
    },
  },
  { name: 'council: one member fails to answer', body: council(['sim/a', 'sim/b:fail@answer', 'sim/c']) },
  {
    name: 'council: all members fail',
    body: council(['sim/a:fail', 'sim/b:fail:delay150', 'sim/c:fail:delay300']),
  },
  {
    name: 'council: one answer left (fail and timeout)',
    body: council(['sim/a', 'sim/b:fail', 'sim/c:timeout']),
  },
  {
    name: 'council: a member times out',
    body: {
      question: 'Which message queue should a small team use?',
      mode: 'council',
      modeConfig: {
        councilModels: ['sim/a', 'sim/b', 'sim/slow:timeout'],
        chairmanModel: 'sim/chair',
        timeoutMs: 1000,
      },
    },
  },
  { name: 'council: a member fails only when ranking', body: council(['sim/a:fail@rank', 'sim/b', 'sim/c']) },
  { name: 'council: one ranking malformed', body: council(['sim/a:malformed@rank', 'sim/b', 'sim/c']) },
  {
    name: 'council: every ranking malformed',
    body: council(['sim/a:malformed@rank', 'sim/b:malformed@rank']),
  },
  {
    name: 'council: chairman fails the synthesis',
    body: council(['sim/a', 'sim/b'], { chairmanModel: 'sim/chair:fail@synthesis' }),
  },
  { name: 'council: a transient error is retried', body: council(['sim/a:transient@answer', 'sim/b']) },
  {
    name: 'council: quorum of 2 cuts the straggler',
    body: {
      question: 'Which queue should we use?',
      modeConfig: { councilModels: ['sim/a', 'sim/b', STRAGGLER], chairmanModel: 'sim/c', quorum: 2 },
    },
  },
  {
    name: 'council: stage deadline cuts the straggler',
    body: {
      question: 'How should we shard?',
      modeConfig: {
        councilModels: ['sim/a', 'sim/b', STRAGGLER],
        chairmanModel: 'sim/c',
        stageDeadlineMs: 1000,
      },
    },
  },
  {
    name: 'council: failing chairmen fall back to the next',
    body: {
      question: 'Rust or Go for the CLI?',
      modeConfig: {
        councilModels: ['sim/a', 'sim/b'],
        chairmanModel: 'sim/c:fail',
        chairmanFallbacks: ['sim/d:fail', 'sim/e'],
      },
    },
  },
  {
    name: 'council: a follow-up turn',
    kind: 'follow-up',
    turns: [
      council(['sim/a', 'sim/b']),
      { question: 'And for a large team?', councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/chair' },
    ],
  },
  {
    name: 'council: cancelled while stage 1 runs',
    kind: 'cancel',
    body: {
      question: 'This one is stopped',
      modeConfig: {
        councilModels: ['sim/a:timeout@answer', 'sim/b:timeout@answer', 'sim/c:timeout@answer'],
        chairmanModel: 'sim/chair',
        timeoutMs: 60_000,
      },
    },
    startedCalls: 3,
  },

  // ---- vote (02-vote.md)
  {
    name: 'vote: a clear winner',
    body: vote(['sim/a:voteA', 'sim/b:voteA', 'sim/c:voteB'], { chairmanModel: 'sim/chair' }),
  },
  {
    name: 'vote: free votes',
    body: vote(['sim/a', 'sim/b', 'sim/c', 'sim/d'], { chairmanModel: 'sim/chair' }),
  },
  {
    name: 'vote: two-way tie resolved by the chairman',
    body: vote(['sim/a:voteA', 'sim/b:voteB', 'sim/c:novote'], { chairmanModel: 'sim/chair' }),
  },
  {
    name: 'vote: tie, chairman fails, alphabetical',
    body: vote(['sim/a:voteB', 'sim/b:voteC', 'sim/c:novote'], { chairmanModel: 'sim/chair:fail@tiebreak' }),
  },
  {
    name: 'vote: tie, chairman names an untied label',
    body: vote(['sim/a:voteA', 'sim/b:voteB', 'sim/c:novote'], { chairmanModel: 'sim/chair:voteC' }),
  },
  {
    name: 'vote: tiebreak passes along the chairman fallbacks',
    body: vote(['sim/a:voteA', 'sim/b:voteB', 'sim/c:novote'], {
      chairmanModel: 'sim/chair:voteC',
      chairmanFallbacks: ['sim/chair2:fail@tiebreak', 'sim/chair3:voteA'],
    }),
  },
  {
    name: 'vote: a voter fails',
    body: vote(['sim/a:voteA', 'sim/b:voteA', 'sim/c:fail@vote', 'sim/d:voteB']),
  },
  { name: 'vote: a voter times out', body: vote(['sim/a:voteA', 'sim/b:voteA', 'sim/c:timeout@vote']) },
  { name: 'vote: no vote parses', body: vote(['sim/a:novote', 'sim/b:novote', 'sim/c:badlabel']) },
  { name: 'vote: fewer than 2 answers', body: vote(['sim/a', 'sim/b:fail', 'sim/c:fail:delay150']) },

  // ---- jury (03-jury.md)
  {
    name: 'jury: verdict with good and fair jurors',
    body: jury(['sim/j1:good', 'sim/j2:fair', 'sim/j3:good']),
  },
  { name: 'jury: split verdicts', body: jury(['sim/j1:good', 'sim/j2:poor', 'sim/j3:fair', 'sim/j4:poor']) },
  { name: 'jury: all jurors fail', body: jury(['sim/a:fail', 'sim/b:fail:delay150', 'sim/c:fail:delay300']) },
  {
    name: 'jury: some jurors fail',
    body: jury(['sim/a', 'sim/b:fail', 'sim/c', 'sim/d:fail@evaluation:delay150']),
  },
  { name: 'jury: fewer than 2 jurors left', body: jury(['sim/a', 'sim/b:fail', 'sim/c:fail:delay150']) },
  {
    name: 'jury: score parsing fails for some',
    body: jury(['sim/a:good', 'sim/b:good', 'sim/c:noscores:poor:delay150', 'sim/d:partial:poor:delay300']),
  },
  {
    name: 'jury: score parsing fails for all',
    body: jury(['sim/a:noscores:fair', 'sim/b:noscores:fair:delay150', 'sim/c:noscores:good:delay300']),
  },
  {
    name: 'jury: verdict parsing fails for all',
    body: jury(['sim/a:noverdict:poor', 'sim/b:noverdict:poor:delay150', 'sim/c:noverdict:good:delay300']),
  },
  {
    name: 'jury: out-of-range and decimal scores',
    body: jury(['sim/a:good:outofrange', 'sim/b:good:decimal', 'sim/c:good:inline']),
  },
  {
    name: 'jury: a juror and (separately) the foreman time out',
    body: jury(['sim/a', 'sim/b', 'sim/c:timeout'], { foremanModel: 'sim/f:timeout@foreman' }),
  },
  {
    name: 'jury: foreman fails',
    body: jury(['sim/a', 'sim/b', 'sim/c'], { foremanModel: 'sim/f:fail@foreman' }),
  },
  {
    name: 'jury: quorum cuts a straggler, fallback foreman',
    body: jury(['sim/a', 'sim/b', 'sim/c', STRAGGLER], {
      foremanModel: 'sim/f:fail',
      foremanFallbacks: ['sim/g'],
      quorum: 3,
    }),
  },

  // ---- debate (04-debate.md)
  {
    name: 'debate: revise, stand, merge and a winner',
    body: debate(['sim/a:revise:voteB', 'sim/b:stand:voteB', 'sim/c:merge:voteA', 'sim/d:revise:voteB']),
  },
  { name: 'debate: free decisions and votes', body: debate(['sim/a', 'sim/b', 'sim/c']) },
  { name: 'debate: duplicate models', body: debate(['sim/same', 'sim/same', 'sim/other']) },
  {
    name: 'debate: all fail in stage 1',
    body: debate(['sim/a:fail', 'sim/b:fail:delay150', 'sim/c:fail:delay300']),
  },
  { name: 'debate: one model left', body: debate(['sim/a', 'sim/b:fail', 'sim/c:fail:delay150']) },
  { name: 'debate: a revision fails', body: debate(['sim/a:fail@revision', 'sim/b', 'sim/c']) },
  {
    name: 'debate: no decision line, no marker, markdown',
    body: debate(['sim/a:nomarker:revise', 'sim/b:markdown:merge', 'sim/c:nodecision']),
  },
  { name: 'debate: everyone stands', body: debate(['sim/a:stand', 'sim/b:stand', 'sim/c:stand']) },
  { name: 'debate: everyone votes for themselves', body: debate(['sim/a:self', 'sim/b:self', 'sim/c:self']) },
  {
    name: 'debate: timeouts in each stage',
    body: debate(['sim/a:timeout@vote', 'sim/b:timeout@revision', 'sim/c', 'sim/d:timeout@answer']),
  },
  {
    name: 'debate: all votes fail to parse',
    body: debate(['sim/a:novote', 'sim/b:novote', 'sim/c:badlabel']),
  },
  {
    name: 'debate: fractional quorum cuts a straggler',
    body: debate(['sim/a', 'sim/b', 'sim/c', STRAGGLER], { quorum: 0.75 }),
  },

  // ---- delphi (05-delphi.md)
  {
    name: 'delphi: numeric, identical answers converge',
    body: delphi(NUMERIC_Q, { panelistModels: ['sim/a:fixed', 'sim/b:fixed', 'sim/c:fixed'] }),
  },
  { name: 'delphi: numeric, free panel', body: delphi(NUMERIC_Q) },
  {
    name: 'delphi: a stubborn panelist, no convergence',
    body: delphi(NUMERIC_Q, { panelistModels: ['sim/a', 'sim/b', 'sim/c', 'sim/d:stubborn'] }),
  },
  { name: 'delphi: qualitative, options from the classification', body: delphi(QUALITATIVE_Q) },
  {
    name: 'delphi: too few valid estimates',
    body: delphi(NUMERIC_Q, {
      panelistModels: ['sim/a', 'sim/b:nonnumeric:delay150', 'sim/c:nonnumeric:delay300'],
    }),
  },
  {
    name: 'delphi: a panelist fails a later round',
    body: delphi(NUMERIC_Q, {
      panelistModels: ['sim/a', 'sim/b', 'sim/c', 'sim/d:fail@reestimate:stubborn'],
    }),
  },
  {
    name: 'delphi: all panelists fail',
    body: delphi(NUMERIC_Q, { panelistModels: ['sim/a:fail', 'sim/b:fail:delay150', 'sim/c:fail:delay300'] }),
  },
  {
    name: 'delphi: mean of 0, CV undefined',
    body: delphi(NUMERIC_Q, {
      panelistModels: ['sim/a:value-5', 'sim/b:value5', 'sim/c:value0'],
      maxRounds: 2,
    }),
  },
  {
    name: 'delphi: malformed classification',
    body: delphi(NUMERIC_Q, { facilitatorModel: 'sim/f:malformed@classify' }),
  },
  {
    name: 'delphi: facilitator fails the report',
    body: delphi(NUMERIC_Q, { facilitatorModel: 'sim/f:fail@report' }),
  },
  {
    name: 'delphi: a round deadline cuts a straggler',
    body: delphi(NUMERIC_Q, {
      panelistModels: ['sim/a', 'sim/b', 'sim/c', STRAGGLER],
      stageDeadlineMs: 1000,
    }),
  },

  // ---- batch
  {
    name: 'batch: three council items, one failing',
    kind: 'batch',
    body: {
      name: 'replay',
      defaults: {
        mode: 'council',
        modeConfig: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/chair' },
      },
      items: [
        { question: 'Batch item one' },
        {
          question: 'Batch item two',
          modeConfig: { councilModels: ['sim/a:fail', 'sim/b:fail:delay150'], chairmanModel: 'sim/chair' },
        },
        { question: 'Batch item three' },
      ],
    },
  },
];
