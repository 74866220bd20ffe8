import type { CallSummary } from './calls';
import type { Degradation, PartialResult } from './shortfall';
import type { DeliberationGrades } from './grading';
export const MODE_NAMES = ['council', 'vote', 'jury', 'debate', 'delphi'] as const;
export type ModeName = (typeof MODE_NAMES)[number];

export interface DeliberationRequest {
  question: string;
  mode?: ModeName;
  conversationId?: string;
  modeConfig?: Record<string, unknown>;
  councilModels?: string[];
  chairmanModel?: string;
}

/**
 * Opt-in stage deadline and quorum of a mode's member stages (an extension to the mode documents;
 * docs/ARCHITECTURE.md "Deadlines, quorum and fallbacks"). Absent: every stage waits for every member.
 */
export interface StageGateOptions {
  /** Go on once this many members answered (an integer), or this fraction of them (0 < f < 1). */
  quorum?: number;
  /** After this long, a stage goes on as soon as the mode's minimum of members answered. */
  stageDeadlineMs?: number;
}

export interface DeliberationAccepted {
  conversationId: string;
  messageId: string;
}

export type MessageStatus = 'queued' | 'running' | 'complete' | 'failed' | 'cancelled';

/** The statuses a deliberation ends in: nothing moves it on from one of these. */
export const TERMINAL_STATUSES: readonly MessageStatus[] = ['complete', 'failed', 'cancelled'];
export const isTerminalStatus = (status: string): boolean =>
  (TERMINAL_STATUSES as readonly string[]).includes(status);
export type MessageRole = 'user' | 'assistant';

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
}

/** What `GET /api/modes` tells a client about one mode. */
export interface ModeDescription {
  mode: ModeName;
  available: boolean;
  multiTurn: boolean;
  roster: { role: string; field: string; min: number; max: number }[];
  defaults: Record<string, unknown>;
  options: { field: string; type: string; description: string; default?: unknown }[];
}

export interface DeliberationView<TResult = unknown> {
  messageId: string;
  conversationId: string;
  mode: ModeName;
  status: MessageStatus;
  error: string | null;
  createdAt: string;
  completedAt: string | null;
  simulated: boolean;
  usage: Usage;
  /** Every model call so far (the title's excepted), in the order they settled. */
  calls: CallSummary[];
  result: TResult;
  /**
   * A deliberation that was cancelled or failed: what it had made of the stage it never committed
   * (the answers that finished, the calls that did not). Null otherwise.
   */
  partial: PartialResult | null;
  /** Who was asked and did not answer readably, and why; null when nobody is missing. */
  degraded: Degradation | null;
  /**
   * A graded deliberation (an expected answer was given, issue 37): each answer's grade as stored
   * with its row, and the panel's final answer's. Absent for an ungraded one.
   */
  grades?: DeliberationGrades;
}

export interface ApiErrorBody {
  statusCode: number;
  error: string;
  message: string;
  fields?: Record<string, string>;
}

/** The operator's configured defaults (libs/config), one entry per mode that has any. */
export interface ModeDefaults {
  timeoutMs: number;
  council: { councilModels: string[]; chairmanModel: string };
  jury: { jurorModels: string[]; foremanModel: string };
  debate: { models: string[] };
  delphi: { panelistModels: string[]; facilitatorModel: string };
  vote: { models: string[] };
}

/** Every model the default rosters name, mode by mode (council, jury, debate, Delphi, vote), repeats kept. */
export function modelsInDefaults(defaults: ModeDefaults): string[] {
  const { council, jury, debate, delphi, vote } = defaults;
  return [
    ...council.councilModels,
    council.chairmanModel,
    ...jury.jurorModels,
    jury.foremanModel,
    ...debate.models,
    ...delphi.panelistModels,
    delphi.facilitatorModel,
    ...vote.models,
  ];
}
