import { DIMENSIONS, MODE_NAMES, VERDICTS } from '@conclave/contracts';
import type { JsonSchemaObject } from '@conclave/deliberation';

/*
 * The JSON Schema of DeliberationOutcome (outcome.types.ts), the MCP tools' outputSchema. Plain
 * draft-07-compatible keywords only (no $ref, no $defs): MCP clients validate with ajv's default.
 * outcome.spec.ts checks real outcomes of every mode and state against it.
 */

const STATUSES = ['queued', 'running', 'complete', 'failed', 'cancelled'];

const string = (description?: string): JsonSchemaObject => ({
  type: 'string',
  ...(description ? { description } : {}),
});
const number: JsonSchemaObject = { type: 'number' };
const integer: JsonSchemaObject = { type: 'integer', minimum: 0 };
const boolean: JsonSchemaObject = { type: 'boolean' };
const nullable = (schema: JsonSchemaObject): JsonSchemaObject => ({ anyOf: [schema, { type: 'null' }] });
const array = (items: JsonSchemaObject): JsonSchemaObject => ({ type: 'array', items });

/** An object with exactly these properties; all required but `optional`. */
function object(
  properties: Record<string, JsonSchemaObject>,
  optional: string[] = [],
  description?: string,
): JsonSchemaObject {
  return {
    type: 'object',
    ...(description ? { description } : {}),
    properties,
    required: Object.keys(properties).filter((key) => !optional.includes(key)),
    additionalProperties: false,
  };
}

const verdict: JsonSchemaObject = { enum: [...VERDICTS] };
const confidence: JsonSchemaObject = { enum: ['LOW', 'MEDIUM', 'HIGH'] };
const usage = object({
  promptTokens: integer,
  completionTokens: integer,
  costUsd: { type: 'number', minimum: 0 },
});
const dimensionScores = object(Object.fromEntries(DIMENSIONS.map((d) => [d, nullable(number)])));
const numberOrString: JsonSchemaObject = { anyOf: [{ type: 'number' }, { type: 'string' }] };

const estimate = object(
  {
    round: integer,
    participant: integer,
    model: string('only once the exercise is over'),
    value: numberOrString,
    confidence,
    changed: boolean,
    reasoning: string(),
  },
  ['model', 'reasoning'],
);

const panelist = object(
  {
    model: string('the model id (never only an anonymized label)'),
    role: string(),
    failed: boolean,
    error: string(),
    answer: string(),
    label: string('its anonymized label in the mode'),
    ranking: { ...array(string()), description: 'council: the answers it ranked, best first, by model' },
    averageRank: number,
    vote: { ...nullable(string()), description: 'vote, debate: the model it voted for' },
    reason: string(),
    action: nullable({ enum: ['REVISE', 'STAND', 'MERGE'] }),
    originalAnswer: string(),
    scores: dimensionScores,
    averageScore: nullable(number),
    verdict: nullable(verdict),
    estimates: array(estimate),
    usage,
  },
  [
    'error',
    'answer',
    'label',
    'ranking',
    'averageRank',
    'vote',
    'reason',
    'action',
    'originalAnswer',
    'scores',
    'averageScore',
    'verdict',
    'estimates',
    'usage',
  ],
);

const votingProperties: Record<string, JsonSchemaObject> = {
  tally: array(object({ label: string(), model: nullable(string()), votes: integer })),
  validVotes: integer,
  invalidVotes: integer,
  tie: boolean,
  tiedModels: array(string()),
  tiebreak: nullable(object({ method: { enum: ['chairman', 'alphabetical'] }, model: nullable(string()) })),
  winner: nullable(object({ model: string(), label: string(), votes: integer, totalVotes: integer })),
};

const delphiRound = object(
  {
    round: integer,
    converged: boolean,
    median: number,
    mean: number,
    cv: nullable(number),
    min: number,
    max: number,
    modeAnswer: string(),
    agreementPercentage: number,
    distribution: array(object({ answer: string(), count: integer, percentage: number })),
    estimates: array(estimate),
  },
  ['median', 'mean', 'cv', 'min', 'max', 'modeAnswer', 'agreementPercentage', 'distribution'],
);

const missing = object({
  model: string(),
  role: string(),
  stage: string(),
  kind: { enum: ['failed', 'cancelled', 'cut', 'unreadable'] },
  why: string(),
});

const degraded = {
  ...nullable(
    object({
      asked: integer,
      answered: integer,
      summary: string(
        'one line naming who is missing and why, e.g. "2 of 3 answered — sim/x: upstream error"',
      ),
      missing: array(missing),
    }),
  ),
  description: 'who was asked and did not answer readably, and why; null when nobody is missing',
};

const partialStage = {
  ...nullable(
    object({
      reason: { enum: ['cancelled', 'failed'] },
      why: nullable(string()),
      stage: nullable(string()),
      answers: array(
        object({
          stage: string(),
          participant: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
          model: string(),
          content: string(),
          finishReason: nullable(string()),
        }),
      ),
      cut: array(missing),
    }),
  ),
  description:
    'a cancelled or failed run: the answers that finished in the stage it never completed, and the calls of it that did not',
};

const answerGrade = object({
  stageType: string(
    'the stage row graded: stage1, stage3, initial_answer, revision, vote_winner, round_2, …',
  ),
  model: nullable(string()),
  role: nullable(string()),
  participant: nullable(integer),
  grade: object(
    {
      verdict: { enum: ['correct', 'incorrect', 'unreadable'] },
      extracted: string('the answer as the grader read it'),
      reason: string(),
      grader: string(),
    },
    ['extracted', 'reason'],
  ),
});

const grades = {
  ...object({ answers: array(answerGrade), final: nullable(answerGrade) }),
  description:
    "a graded deliberation: every answer's grade as stored with it, and the panel's final answer's (null while none); absent when ungraded",
};

export const DELIBERATION_OUTCOME_SCHEMA: JsonSchemaObject = object(
  {
    messageId: string(),
    conversationId: string(),
    mode: { enum: [...MODE_NAMES] },
    status: { enum: STATUSES },
    finalText: {
      ...nullable(string()),
      description:
        "The chairman's synthesis, the winning answer, or the foreman's or facilitator's report; null while it does not exist (still running, or its author failed).",
    },
    finalAuthor: nullable(
      object(
        {
          role: string(),
          model: string(),
          failed: boolean,
          error: string(),
          failedBefore: array(object({ model: string(), error: string() })),
        },
        ['error', 'failedBefore'],
      ),
    ),
    partial: {
      type: 'boolean',
      description: 'true when a panelist or the final author failed, or the run was cancelled or failed',
    },
    enoughAnswered: {
      ...nullable(boolean),
      description: "whether enough panelists answered for the mode's rules (null before any stage finished)",
    },
    degraded,
    partialStage,
    failures: array(object({ model: string(), role: string(), stage: string(), error: string() })),
    panelists: array(panelist),
    council: object({
      aggregateRanking: array(object({ model: string(), averageRank: number, rankingsCount: integer })),
    }),
    vote: object(votingProperties),
    debate: object({
      ...votingProperties,
      revisions: nullable(object({ revised: integer, stood: integer, merged: integer, unreadable: integer })),
    }),
    jury: object({
      majorityVerdict: nullable(verdict),
      finalVerdict: nullable(verdict),
      tally: nullable(object({ approve: integer, revise: integer, reject: integer })),
      dimensionMeans: nullable(dimensionScores),
      jurors: nullable(integer),
      successfulJurors: nullable(integer),
      warnings: array(string()),
    }),
    delphi: object({
      questionType: nullable({ enum: ['numeric', 'qualitative'] }),
      options: nullable(array(string())),
      rounds: array(delphiRound),
      converged: nullable(boolean),
      convergenceRound: nullable(integer),
      finalValue: nullable(numberOrString),
      median: nullable(number),
      interval: nullable(object({ low: number, high: number, level: number })),
      attributed: boolean,
    }),
    usage,
    links: object({
      web: string('the web page of the deliberation'),
      transcript: string('the transcript resource URI'),
    }),
    error: nullable(string()),
    grades,
  },
  ['council', 'vote', 'debate', 'jury', 'delphi', 'grades'],
  'The outcome of a deliberation: the final text only when it exists, failures, each panelist by name, the mode summary.',
);
