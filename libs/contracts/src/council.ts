import type { StageGateOptions } from './modes';
export interface Stage1Response {
  model: string;
  response: string;
  responseTimeMs: number;
}

export interface Stage2Response {
  model: string;
  ranking: string;
  parsedRanking: string[];
}

export interface AggregateRanking {
  model: string;
  averageRank: number;
  rankingsCount: number;
}

export interface Stage2Metadata {
  labelToModel: Record<string, string>;
  aggregateRankings: AggregateRanking[];
}

export interface Stage3Response {
  model: string;
  response: string;
  responseTimeMs: number;
}

/** Partial while running: stages not reached yet are absent. */
export interface CouncilResult {
  stage1: Stage1Response[];
  stage2: Stage2Response[];
  stage2Metadata: Stage2Metadata;
  stage3: Stage3Response;
  title?: string;
}

export interface CouncilConfig extends StageGateOptions {
  councilModels: string[];
  chairmanModel: string;
  timeoutMs: number;
  /** Asked in turn when the chairman fails. */
  chairmanFallbacks?: string[];
}
