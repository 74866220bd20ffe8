import type { StageGateOptions } from './modes';
import type { Stage1Response } from './council';

export type LabelMap = Record<string, string>;
export type RevisionDecision = 'REVISE' | 'STAND' | 'MERGE';

export interface RevisionResponse {
  model: string;
  decision: RevisionDecision | null;
  reasoning: string | null;
  originalResponse: string;
  revisedResponse: string;
  originalWordCount: number;
  revisedWordCount: number;
  responseTimeMs: number;
  parseSuccess: boolean;
}

export interface RevisionSummary {
  totalModels: number;
  revised: number;
  stood: number;
  merged: number;
  parseFailed: number;
}

export interface RevisionRoundResult {
  revisions: RevisionResponse[];
  summary: RevisionSummary;
}

export interface VoteResponse {
  model: string;
  voteText: string;
  votedFor: string | null;
  responseTimeMs: number;
}

export interface DebateVoteResult {
  votes: VoteResponse[];
  tallies: Record<string, number>;
  revisedLabelToModel: LabelMap;
  validVoteCount: number;
  invalidVoteCount: number;
  isTie: boolean;
  tiedLabels: string[];
}

export interface DebateWinnerResult {
  winnerLabel: string;
  winnerModel: string;
  winnerResponse: string;
  winnerDecision: RevisionDecision | null;
  voteCount: number;
  totalVotes: number;
  tiebroken: boolean;
  tiebreakerMethod?: 'alphabetical';
}

/** Partial while running: stages not reached yet are absent. */
export interface DebateResult {
  round1: Stage1Response[];
  round1LabelMap: LabelMap;
  revisions: RevisionResponse[];
  revisionSummary: RevisionSummary;
  revisedLabelMap: LabelMap;
  votes: DebateVoteResult;
  winner: DebateWinnerResult;
  title?: string;
}

export interface DebateConfig extends StageGateOptions {
  models: string[];
  timeoutMs: number;
}
