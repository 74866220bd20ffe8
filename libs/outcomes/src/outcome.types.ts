import type {
  Confidence,
  Degradation,
  DeliberationGrades,
  PartialResult,
  Dimension,
  MessageStatus,
  ModeName,
  QuestionType,
  RevisionDecision,
  Usage,
  Verdict,
} from '@conclave/contracts';

/*
 * The structured result of a deliberation, whatever its mode (the MCP tools' structuredContent).
 * Type aliases rather than interfaces: they are assignable to `Record<string, unknown>`.
 */

/** A model call that did not succeed: who, in which role and stage, and why (in words a user may see). */
export type OutcomeFailure = {
  model: string;
  role: string;
  stage: string;
  error: string;
};

/** Who writes the mode's final text: chairman, winner (vote, debate), foreman or facilitator. */
export type FinalAuthor = {
  role: string;
  model: string;
  /** Its call failed: there is no final text, and none is presented as one. */
  failed: boolean;
  error?: string;
  /** The seat's fallbacks (issue 32): the models asked before this one, which failed, in order. */
  failedBefore?: { model: string; error: string }[];
};

/** One Delphi estimate, with its author's name only once the exercise is over (05-delphi.md). */
export type DelphiEstimateOutcome = {
  round: number;
  /** 1-based, stable across rounds. */
  participant: number;
  model?: string;
  value: number | string;
  confidence: Confidence;
  changed: boolean;
  reasoning?: string;
};

/** One member of the panel (a seat: the same model may sit twice in debate, jury and vote). */
export type PanelistOutcome = {
  model: string;
  role: string;
  /** One of its calls failed (see `failures`). */
  failed: boolean;
  error?: string;
  /** Its answer: council/vote/debate's answer (debate: the revised one), a juror's assessment. */
  answer?: string;
  /** Its anonymized label where the mode used one (council, vote: the answer's; debate: the revised answer's). */
  label?: string;
  /** Council: the order it ranked the answers in, by model name (best first). */
  ranking?: string[];
  /** Council: its answer's average position in the others' rankings (1 is best). */
  averageRank?: number;
  /** Vote, debate: the model whose answer it voted for; null for a vote that could not be read. */
  vote?: string | null;
  /** Vote, debate: what it wrote when voting. */
  reason?: string;
  /** Debate: what it did in the revision round (null: could not be read). */
  action?: RevisionDecision | null;
  /** Debate: its first answer, before the revision round. */
  originalAnswer?: string;
  /** Jury: the scores it gave, per dimension (null: could not be read). */
  scores?: Record<Dimension, number | null>;
  averageScore?: number | null;
  verdict?: Verdict | null;
  /** Delphi, once the exercise is over: its estimate in each round. */
  estimates?: DelphiEstimateOutcome[];
  /** Summed over its calls, where the providers reported them. */
  usage?: Usage;
};

export type RankedModel = { model: string; averageRank: number; rankingsCount: number };

export type CouncilSummary = { aggregateRanking: RankedModel[] };

export type TallyEntry = { label: string; model: string | null; votes: number };

export type VotingSummary = {
  tally: TallyEntry[];
  validVotes: number;
  invalidVotes: number;
  tie: boolean;
  /** The models whose answers tied for first place. */
  tiedModels: string[];
  tiebreak: { method: 'chairman' | 'alphabetical'; model: string | null } | null;
  winner: { model: string; label: string; votes: number; totalVotes: number } | null;
};

export type DebateSummary = VotingSummary & {
  revisions: { revised: number; stood: number; merged: number; unreadable: number } | null;
};

export type JurySummary = {
  /** The jurors' majority (03-jury.md's tie rules). */
  majorityVerdict: Verdict | null;
  /** The foreman's verdict, when the foreman reported. */
  finalVerdict: Verdict | null;
  tally: { approve: number; revise: number; reject: number } | null;
  dimensionMeans: Record<Dimension, number | null> | null;
  jurors: number | null;
  successfulJurors: number | null;
  warnings: string[];
};

export type DelphiRoundOutcome = {
  round: number;
  converged: boolean;
  /** Numeric questions. */
  median?: number;
  mean?: number;
  cv?: number | null;
  min?: number;
  max?: number;
  /** Qualitative questions. */
  modeAnswer?: string;
  agreementPercentage?: number;
  distribution?: { answer: string; count: number; percentage: number }[];
  estimates: DelphiEstimateOutcome[];
};

export type DelphiSummary = {
  questionType: QuestionType | null;
  options: string[] | null;
  rounds: DelphiRoundOutcome[];
  converged: boolean | null;
  convergenceRound: number | null;
  finalValue: number | string | null;
  median: number | null;
  interval: { low: number; high: number; level: number } | null;
  /** Whether estimates carry their authors' names: only once the exercise is over. */
  attributed: boolean;
};

export type DeliberationOutcome = {
  messageId: string;
  conversationId: string;
  mode: ModeName;
  status: MessageStatus;
  /** The chairman's synthesis, the winning answer, the foreman's or the facilitator's report; null while it does not exist. */
  finalText: string | null;
  finalAuthor: FinalAuthor | null;
  /** Something is missing: a panelist or the final author failed, or the run was cancelled or failed. */
  partial: boolean;
  /** Enough panelists answered for the mode's rules, judged on the stages reached; null before any. */
  enoughAnswered: boolean | null;
  /** Who was asked and did not answer readably, and why (`summary`: one line for the top); null when nobody. */
  degraded: Degradation | null;
  /** A cancelled or failed run: the answers that finished in the stage it never completed, and what was cut. */
  partialStage: PartialResult | null;
  failures: OutcomeFailure[];
  panelists: PanelistOutcome[];
  council?: CouncilSummary;
  vote?: VotingSummary;
  debate?: DebateSummary;
  jury?: JurySummary;
  delphi?: DelphiSummary;
  usage: Usage;
  links: { web: string; transcript: string };
  error: string | null;
  /** A graded deliberation (an expected answer was given): each answer's stored grade and the final one's; absent otherwise. */
  grades?: DeliberationGrades;
};
