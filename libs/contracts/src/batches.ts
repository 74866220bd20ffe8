import type { DeliberationRequest, ModeName } from './modes';
import type { Degradation, PartialResult } from './shortfall';
import type { Grade } from './grading';

/** `budget_exhausted`: its `maxCostUsd` was reached; the items it had not started are cancelled. */
export type BatchStatus = 'queued' | 'running' | 'complete' | 'cancelled' | 'budget_exhausted';

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
  /** No new item starts once the batch's recorded cost reaches this (US dollars, > 0). */
  maxCostUsd?: number;
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
  /** The batch's budget (US dollars); null when it has none. */
  maxCostUsd: number | null;
  /** Items run more than once (POST /api/batches/:id/retry-failed); counts are of each item's latest attempt. */
  retriedItems: number;
}

export interface BatchResultLine {
  index: number;
  messageId: string;
  conversationId: string;
  mode: ModeName;
  status: string;
  error: string | null;
  /** The attempt this line shows: the item's latest, 1 unless it was retried (= how many attempts it has had). */
  attempt: number;
  /** The item's `key` as submitted (matching across batches); null when none. */
  key: string | null;
  /** The item's `reference` as submitted (a verdict, a number, a model id or an option); null when none. */
  reference: string | number | null;
  /** The item's question as submitted. */
  question: string;
  /** Jury: the content under evaluation; null for the other modes. */
  content: string | null;
  /** Jury: the question the content was answering (`modeConfig.originalQuestion`), null when none was given. */
  originalQuestion: string | null;
  /** The mode's primary answer: synthesis, winner's answer, verdict, final value. */
  answer: string | null;
  headline: Record<string, unknown> | null;
  resultUrl: string;
  /** Who was asked and did not answer readably, and why (`summary`: one line); null when nobody. */
  degraded: Degradation | null;
  /** A cancelled or failed item: the answers that finished in the stage it never completed, and what was cut. */
  partial: PartialResult | null;
  /** A graded item (issue 37): its expected answer as stored (a number for `numeric`, a letter for `choice`). Absent when ungraded. */
  expected?: string | number | null;
  /** A graded item: the grade of the panel's final answer as stored with its row; null while it has none. Absent when ungraded. */
  grade?: Grade | null;
}
