import type { StageGateOptions } from './modes';
import type { Stage1Response } from './council';
import type { LabelMap, VoteResponse } from './debate';

export interface VoteTallyResult {
  votes: VoteResponse[];
  tallies: Record<string, number>;
  validVoteCount: number;
  invalidVoteCount: number;
  isTie: boolean;
  tiedLabels: string[];
}

export interface TiebreakResult {
  model: string;
  chosenLabel: string;
  voteText: string;
  method: 'chairman' | 'alphabetical';
}

export interface VoteWinnerResult {
  winnerLabel: string;
  winnerModel: string;
  winnerResponse: string;
  voteCount: number;
  totalVotes: number;
  tiebroken: boolean;
  tiebreakerMethod?: 'chairman' | 'alphabetical';
}

/** Partial while running: stages not reached yet are absent. */
export interface VoteResult {
  stage1: Stage1Response[];
  labelMap: LabelMap;
  votes: VoteTallyResult;
  tiebreak?: TiebreakResult;
  winner: VoteWinnerResult;
  title?: string;
}

export interface VoteConfig extends StageGateOptions {
  models: string[];
  chairmanModel: string;
  timeoutMs: number;
  /** Asked in turn when the tiebreaking chairman fails or names no tied label. */
  chairmanFallbacks?: string[];
}
