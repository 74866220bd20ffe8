import type { DeliberationRequest, ModeName } from './modes';

export type BatchStatus = 'queued' | 'running' | 'complete' | 'cancelled';

export const BATCH_MAX_ITEMS = 10_000;
export const BATCH_MAX_CONCURRENCY = 100;
export const BATCH_DEFAULT_CONCURRENCY = 8;

export interface BatchRequest {
  name?: string;
  /** Applied under every item; an item's own fields win (its `modeConfig` merged key by key). */
  defaults?: Partial<DeliberationRequest>;
  items: Partial<DeliberationRequest>[];
  concurrency?: number;
  generateTitles?: boolean;
}

export interface BatchAccepted {
  batchId: string;
  total: number;
  status: BatchStatus;
}

export interface BatchCounts {
  total: number;
  queued: number;
  running: number;
  complete: number;
  failed: number;
  cancelled: number;
}

export interface BatchView extends BatchCounts {
  batchId: string;
  name: string | null;
  status: BatchStatus;
  concurrency: number;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  usage: { promptTokens: number; completionTokens: number; costUsd: number };
  /** Seconds until the last item is expected to finish, from the pace so far; null before any finished. */
  etaSeconds: number | null;
}

export interface BatchResultLine {
  index: number;
  messageId: string;
  conversationId: string;
  mode: ModeName;
  status: string;
  error: string | null;
  question: string;
  /** The mode's primary answer: synthesis, winner's answer, verdict, final value. */
  answer: string | null;
  headline: Record<string, unknown> | null;
  resultUrl: string;
}
