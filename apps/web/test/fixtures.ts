import type {
  CouncilResult,
  DebateResult,
  DeliveredEvent,
  DelphiResult,
  JuryResult,
  VoteResult,
} from '@conclave/contracts';

export const council: CouncilResult = {
  stage1: [
    { model: 'sim/alpha', response: 'Alpha says **forty-two**.', responseTimeMs: 120 },
    { model: 'sim/beta', response: 'Beta says seven.', responseTimeMs: 340 },
  ],
  stage2: [
    {
      model: 'sim/alpha',
      ranking:
        'Response B is thin; **Response A** is complete.\n\nFINAL RANKING:\n1. Response A\n2. Response B',
      parsedRanking: ['Response A', 'Response B'],
    },
    { model: 'sim/beta', ranking: 'I cannot decide.', parsedRanking: [] },
  ],
  stage2Metadata: {
    labelToModel: { 'Response A': 'sim/alpha', 'Response B': 'sim/beta' },
    aggregateRankings: [
      { model: 'sim/alpha', averageRank: 1, rankingsCount: 1 },
      { model: 'sim/beta', averageRank: 2, rankingsCount: 1 },
    ],
  },
  stage3: { model: 'sim/chair', response: '# The answer\nForty-two, on balance.', responseTimeMs: 200 },
};

export const vote: VoteResult = {
  stage1: council.stage1,
  labelMap: { 'Response A': 'sim/alpha', 'Response B': 'sim/beta' },
  votes: {
    votes: [
      {
        model: 'sim/alpha',
        voteText: 'Response A is the most complete; Response B is too short.\n\nVOTE: Response A',
        votedFor: 'Response A',
        responseTimeMs: 30,
      },
      {
        model: 'sim/beta',
        voteText: 'Response B says it in fewer words.\n\nVOTE: Response B',
        votedFor: 'Response B',
        responseTimeMs: 31,
      },
      { model: 'sim/gamma', voteText: 'I like both.', votedFor: null, responseTimeMs: 32 },
    ],
    tallies: { 'Response A': 1, 'Response B': 1 },
    validVoteCount: 2,
    invalidVoteCount: 1,
    isTie: true,
    tiedLabels: ['Response A', 'Response B'],
  },
  tiebreak: {
    model: 'sim/chair',
    chosenLabel: 'Response B',
    voteText: 'On balance Response B is the stronger answer.\n\nVOTE: Response B',
    method: 'chairman',
  },
  winner: {
    winnerLabel: 'Response B',
    winnerModel: 'sim/beta',
    winnerResponse: 'Beta says seven.',
    voteCount: 1,
    totalVotes: 2,
    tiebroken: true,
    tiebreakerMethod: 'chairman',
  },
};

const scores = (n: number) => ({
  accuracy: n,
  completeness: n - 1,
  clarity: n,
  relevance: n + 1,
  actionability: n,
});

export const jury: JuryResult = {
  presentation: { content: 'The earth is round.', originalQuestion: 'What shape is the earth?' },
  jurors: [
    {
      model: 'sim/j1',
      assessmentText: 'Solid.',
      scores: scores(8),
      average: 8,
      verdict: 'APPROVE',
      recommendations: [],
      responseTimeMs: 90,
      parseSuccess: true,
    },
    {
      model: 'sim/j2',
      assessmentText: 'Needs sources.',
      scores: scores(5),
      average: 5,
      verdict: 'REVISE',
      recommendations: ['cite'],
      responseTimeMs: 110,
      parseSuccess: true,
    },
  ],
  jurorSummary: {
    jurorCount: 2,
    successfulJurors: 2,
    majorityVerdict: 'APPROVE',
    voteTally: { approve: 1, revise: 1, reject: 0 },
    dimensionAverages: { accuracy: 6.5, completeness: 5.5, clarity: 6.5, relevance: 7.5, actionability: 6.5 },
    dimensionRanges: {
      accuracy: { min: 5, max: 8 },
      completeness: { min: 4, max: 7 },
      clarity: { min: 5, max: 8 },
      relevance: { min: 6, max: 9 },
      actionability: { min: 5, max: 8 },
    },
    failedJurors: [],
  },
  foreman: {
    model: 'sim/foreman',
    reportText: 'The jury **approves**.',
    finalVerdict: 'APPROVE',
    dimensionAnalysis: [],
    keyStrengths: [],
    keyWeaknesses: [],
    recommendations: [],
    dissentingOpinions: [],
    responseTimeMs: 150,
  },
  majorityVerdict: 'APPROVE',
  voteTally: { approve: 1, revise: 1, reject: 0 },
  dimensionAverages: { accuracy: 6.5, completeness: 5.5, clarity: 6.5, relevance: 7.5, actionability: 6.5 },
};

export const debate: DebateResult = {
  round1: council.stage1,
  round1LabelMap: { 'Response A': 'sim/alpha', 'Response B': 'sim/beta' },
  revisions: [
    {
      model: 'sim/alpha',
      decision: 'REVISE',
      reasoning: 'Response B had a point.',
      originalResponse: 'one\ntwo',
      revisedResponse: 'one\nthree four five',
      originalWordCount: 2,
      revisedWordCount: 4,
      responseTimeMs: 100,
      parseSuccess: true,
    },
    {
      model: 'sim/beta',
      decision: 'STAND',
      reasoning: null,
      originalResponse: 'seven words here',
      revisedResponse: 'seven',
      originalWordCount: 3,
      revisedWordCount: 1,
      responseTimeMs: 100,
      parseSuccess: true,
    },
  ],
  revisionSummary: { totalModels: 2, revised: 1, stood: 1, merged: 0, parseFailed: 0 },
  revisedLabelMap: { 'Response A': 'sim/beta', 'Response B': 'sim/alpha' },
  votes: {
    votes: [
      {
        model: 'sim/alpha',
        voteText: 'Response B covers more.\n\nVOTE: Response B',
        votedFor: 'Response B',
        responseTimeMs: 20,
      },
      {
        model: 'sim/beta',
        voteText: 'Response B, clearly.\nVOTE: Response B',
        votedFor: 'Response B',
        responseTimeMs: 21,
      },
    ],
    tallies: { 'Response A': 0, 'Response B': 2 },
    revisedLabelToModel: { 'Response A': 'sim/beta', 'Response B': 'sim/alpha' },
    validVoteCount: 2,
    invalidVoteCount: 0,
    isTie: false,
    tiedLabels: [],
  },
  winner: {
    winnerLabel: 'Response B',
    winnerModel: 'sim/alpha',
    winnerResponse: 'one\nthree four five',
    winnerDecision: 'REVISE',
    voteCount: 2,
    totalVotes: 2,
    tiebroken: false,
  },
};

const confidenceCounts = { low: 0, medium: 1, high: 1 };

function numericRound(round: number, a: number, b: number): DeliveredEvent {
  const mean = (a + b) / 2;
  return {
    type: 'round_complete',
    messageId: 'm1',
    seq: round + 2,
    at: '2026-11-22T00:00:00.000Z',
    round,
    data: {
      estimates: [
        { participantIndex: 1, estimate: a, confidence: 'HIGH', changed: round > 1 },
        { participantIndex: 2, estimate: b, confidence: 'MEDIUM', changed: false },
      ],
      stats: {
        mean,
        median: mean,
        stdDev: Math.abs(a - b) / 2,
        min: Math.min(a, b),
        max: Math.max(a, b),
        cv: Math.abs(a - b) / 2 / mean,
        cvUndefined: false,
        highVariance: false,
        confidenceCounts,
      },
      converged: round === 2,
    },
  } as DeliveredEvent;
}

export const delphiEvents: DeliveredEvent[] = [numericRound(1, 100, 300), numericRound(2, 190, 210)];

export const delphiRunning: Partial<DelphiResult> = {
  classification: { type: 'numeric', options: null, reasoning: 'A count of things.' },
};

const estimate = (model: string, value: number) => ({
  model,
  estimate: value,
  confidence: 'HIGH' as const,
  reasoning: 'because',
  previousEstimate: null,
  changed: false,
  responseTimeMs: 10,
});

export const delphiDone: DelphiResult = {
  classification: delphiRunning.classification!,
  rounds: [
    {
      roundNumber: 1,
      estimates: [estimate('sim/p1', 100), estimate('sim/p2', 300)],
      stats: (delphiEvents[0].data as { stats: never }).stats,
      converged: false,
    },
    {
      roundNumber: 2,
      estimates: [estimate('sim/p1', 190), estimate('sim/p2', 210)],
      stats: (delphiEvents[1].data as { stats: never }).stats,
      converged: true,
    },
  ],
  converged: true,
  convergenceRound: 2,
  finalValue: 200,
  report: {
    facilitatorModel: 'sim/fac',
    report: 'Panel settled on **200**.',
    totalRounds: 2,
    converged: true,
    finalValue: 200,
    responseTimeMs: 50,
  },
};

export const qualitativeEvents: DeliveredEvent[] = [
  {
    type: 'round_complete',
    messageId: 'm2',
    seq: 3,
    at: '2026-11-22T00:00:00.000Z',
    round: 1,
    data: {
      estimates: [
        { participantIndex: 1, answer: 'Yes', confidence: 'HIGH', changed: false },
        { participantIndex: 2, answer: 'No', confidence: 'LOW', changed: false },
      ],
      stats: {
        distribution: [
          { answer: 'Yes', count: 1, percentage: 50 },
          { answer: 'No', count: 1, percentage: 50 },
        ],
        agreementPercentage: 50,
        mode: 'Yes',
        confidenceCounts,
      },
      converged: false,
    },
  } as DeliveredEvent,
];

/** Round 1 of four panelists, one far above the rest; the run goes on (nothing revealed). */
export const delphiOutlierEvents: DeliveredEvent[] = [
  {
    type: 'round_complete',
    messageId: 'm3',
    seq: 9,
    at: '2026-11-22T00:00:00.000Z',
    round: 1,
    data: {
      estimates: [
        { participantIndex: 1, estimate: 10_000, confidence: 'HIGH', changed: false },
        { participantIndex: 2, estimate: 11_000, confidence: 'MEDIUM', changed: false },
        { participantIndex: 3, estimate: 9_000, confidence: 'LOW', changed: false },
        { participantIndex: 4, estimate: 40_000, confidence: 'HIGH', changed: false },
      ],
      stats: {
        mean: 17_500,
        median: 10_500,
        stdDev: 13_000,
        min: 9_000,
        max: 40_000,
        cv: 13_000 / 17_500,
        cvUndefined: false,
        highVariance: false,
        confidenceCounts: { low: 1, medium: 1, high: 2 },
      },
      converged: false,
    },
  } as DeliveredEvent,
];

/** A panel that agreed at once: one round, every estimate the same, converged in round 1. */
export const delphiOneRound: DelphiResult = {
  classification: { type: 'numeric', options: null, reasoning: 'A quantity.' },
  rounds: [
    {
      roundNumber: 1,
      estimates: ['sim/p1', 'sim/p2', 'sim/p3'].map((m) => estimate(m, 9458)),
      stats: {
        mean: 9458,
        median: 9458,
        stdDev: 0,
        min: 9458,
        max: 9458,
        cv: 0,
        cvUndefined: false,
        highVariance: false,
        confidenceCounts: { low: 0, medium: 0, high: 3 },
      },
      converged: true,
    },
  ],
  converged: true,
  convergenceRound: 1,
  finalValue: 9458,
  report: {
    facilitatorModel: 'sim/fac',
    report: 'Immediate consensus.',
    totalRounds: 1,
    converged: true,
    finalValue: 9458,
    responseTimeMs: 40,
    median: 9458,
    confidenceInterval: { low: 9458, high: 9458, level: 0.95 },
  },
};
