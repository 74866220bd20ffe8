import type {
  DeliveredEvent,
  FinishReason,
  FirstStageStart,
  Grading,
  ModeDefaults,
  ModeDescription,
  ModeFacts,
  ModeName,
} from '@conclave/contracts';

export type { ModeDefaults } from '@conclave/contracts';
import type { ChatMessage } from '@conclave/llm';

/** One model call a stage needs. `key` is unique within the stage and stable across retries. */
export interface PlannedCall {
  key: string;
  /** What `model_progress.participant` shows: the model id, or a 1-based index in anonymous modes. */
  participant: string | number;
  model: string;
  messages: ChatMessage[];
  /**
   * A single seat (chairman, foreman, facilitator, tiebreaker): the models asked in turn when this
   * call fails or its answer is not accepted (ModeDefinition.accepts). Each has its own key; the
   * stage's reduce gets the seat's final outcome in this call's place.
   */
  fallbacks?: PlannedCall[];
}

interface OutcomeBase {
  key: string;
  model: string;
  responseTimeMs: number;
}

export interface SuccessfulCall extends OutcomeBase {
  ok: true;
  content: string;
  servedModel: string;
  promptTokens: number | null;
  completionTokens: number | null;
  costUsd: number | null;
  simulated: boolean;
  /** Why the model stopped; `length`: the answer was cut at the token limit. */
  finishReason?: FinishReason | null;
}

export interface FailedCall extends OutcomeBase {
  ok: false;
  error: string;
}

export type CallOutcome = SuccessfulCall | FailedCall;

/** A `deliberation_stages` row as a mode produces it (00-shared.md §5). */
export interface StageRow {
  stageType: string;
  stageOrder: number;
  model: string | null;
  role: string | null;
  content: string;
  parsedData: Record<string, unknown> | null;
  responseTimeMs: number | null;
  promptTokens: number | null;
  completionTokens: number | null;
  costUsd: number | null;
  /** Position in the roster, for modes where one model can take part twice; part of the row's key. */
  participant?: number | null;
}

/** An event a mode wants delivered. `key` makes emitting it twice (a retried job) a no-op. */
export interface ModeEvent {
  key: string;
  type: string;
  payload: Record<string, unknown>;
}

export interface HistoryTurn {
  question: string;
  answer: string;
}

/**
 * Everything a mode may read while planning or reducing a stage: loaded from rows, or, for the
 * stage after a commit this process wrote, what that commit's write answered it stored.
 */
export interface DeliberationContext<Config> {
  messageId: string;
  conversationId: string;
  question: string;
  config: Config;
  /** A graded item's expected answer (LoadedDeliberation.expected); absent when it has none. */
  expected?: string;
  history: HistoryTurn[];
  rows: StageRow[];
  /** Every stored model outcome of earlier stages (and of this one, on a retry), by stage. */
  outcomes: Record<string, CallOutcome[]>;
  /** Time since the request was accepted, and the whole-deliberation cap (00-shared.md §2). */
  elapsedMs: number;
  deliberationCapMs: number;
  /**
   * While reducing a stage with fallbacks: every outcome of a seat whose first model did not give
   * the final answer, in the order asked, by the seat's first key.
   */
  attempts?: Record<string, CallOutcome[]>;
}

export type StageTransition =
  { kind: 'next'; stage: string } | { kind: 'done'; content: string } | { kind: 'fail'; message: string };

export interface StageReduction {
  rows: StageRow[];
  events: ModeEvent[];
  transition: StageTransition;
}

export interface FieldErrors {
  [fieldPath: string]: string;
}

export interface RequestEnvelope {
  question: string;
  modeConfig?: Record<string, unknown>;
  /** Council's top-level roster fields; other modes reject them. */
  councilModels?: string[];
  chairmanModel?: string;
}

export type ResolvedConfig<Config> = { ok: true; config: Config } | { ok: false; fields: FieldErrors };

/**
 * A deliberation mode: data plus pure functions. The engine runs any mode through this
 * interface, so adding a mode never changes the engine.
 */
export interface ModeDefinition<Config = unknown, Result = unknown> {
  mode: ModeName;
  /** What the rest of the system knows about the mode, as data (`@conclave/deliberation/facts`). */
  facts?: ModeFacts;
  multiTurn: boolean;
  /** Whether the 600 s whole-deliberation cap of 00-shared.md §2 applies (01-council.md §F: not for council). */
  enforcesDeliberationCap: boolean;
  firstStage: string;
  /** Class-validator DTO describing `modeConfig`. */
  configSchema: new () => object;
  resolveConfig(request: RequestEnvelope, defaults: ModeDefaults): ResolvedConfig<Config>;
  /** The message for a missing question, when the mode's document words it differently. */
  questionRequiredMessage?: string;
  /** What the user message stores (00-shared.md §5); the question unless the mode says otherwise. */
  userContent?(question: string, config: Config): string;
  /** Per-call timeout, from the config. */
  timeoutMs(config: Config): number;
  startEvents(stage: string, ctx: DeliberationContext<Config>): ModeEvent[];
  plan(stage: string, ctx: DeliberationContext<Config>): PlannedCall[];
  /**
   * When a stage of several members goes on without its slowest (quorum, deadline); null or absent:
   * it waits for every call, as the mode documents say.
   */
  gate?(stage: string, ctx: DeliberationContext<Config>, calls: PlannedCall[]): StageGate | null;
  /** Whether a single seat's answer is usable; one that is not passes the seat to its next fallback. */
  accepts?(stage: string, ctx: DeliberationContext<Config>, outcome: SuccessfulCall): boolean;
  /** Events to deliver as soon as one call settles (e.g. jury's `juror_complete`), before the stage ends. */
  callEvents?(stage: string, ctx: DeliberationContext<Config>, outcome: CallOutcome): ModeEvent[];
  reduce(stage: string, ctx: DeliberationContext<Config>, outcomes: CallOutcome[]): StageReduction;
  /** The model that writes the conversation title, and its prompt. */
  titleCall(ctx: DeliberationContext<Config>): { model: string; messages: ChatMessage[] };
  /** Rebuilds the mode's Result (partial while running) from stored rows alone. */
  load(rows: StageRow[], config: Config, title: string | null): Result;
  describe(defaults: ModeDefaults): ModeDescription;
  /** The headline of a (possibly partial) result, for batch exports. */
  headline(result: Result): Headline;
}

export interface Headline {
  /** The mode's primary answer: council synthesis, winner's answer, jury verdict, Delphi final value. */
  answer: string | null;
  details: Record<string, unknown>;
}

export type AnyModeDefinition = ModeDefinition<any, unknown>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Stored message state the engine needs, read under the message's row lock where it matters. */
export interface MessageState {
  messageId: string;
  conversationId: string;
  mode: ModeName;
  status: 'queued' | 'running' | 'complete' | 'failed' | 'cancelled';
  stage: string | null;
  needsTitle: boolean;
  createdAt: Date;
  batchId: string | null;
}

export interface LoadedDeliberation extends MessageState {
  /**
   * When the current stage's opening was stored (its first `model_progress … started` event), if
   * it was: a retried stage job measures its stage deadline from it. Absent or null: not opened.
   */
  stageOpenedAt?: Date | null;
  question: string;
  config: unknown;
  /**
   * A graded item's expected answer (issue 37), as text, handed to every model call as
   * `CompletionRequest.expected` for the simulated provider; absent when the item has none. A load
   * sets it from the turn's user message's `config->'expected'` (gradingFields).
   */
  expected?: string;
  /**
   * A graded turn's grading (issue 37): the user message's stored `config` `{ expected, grader }`;
   * the engine grades the stage's answer rows with it (gradeRows). Absent: an ungraded turn.
   */
  grading?: Grading;
  history: HistoryTurn[];
  rows: StageRow[];
  outcomes: Record<string, CallOutcome[]>;
}

export interface MessageUpdate {
  status?: MessageState['status'];
  stage?: string | null;
  error?: string | null;
  content?: string;
  completed?: boolean;
}

/**
 * One write of a stage in a single round trip: its opening, calls that settled, its commit, the
 * title, a final failure. The store's conclave_stage_write is the only place that decides what it
 * does. Applied under the message's row lock in this order: outcomes (stopping at 'replaced' when an
 * earlier run stored one of them first), the conversation's title, the guard (ended, or no longer at
 * `stage` when `guard`), rows, the fallback title, events (new keys only, numbered), the message's
 * move.
 */
export interface StageWrite {
  stage: string;
  /** Write nothing but outcomes unless the message is still at `stage`. */
  guard?: boolean;
  /** Mark a queued message running. */
  markRunning?: boolean;
  outcomes?: CallOutcome[];
  rows?: StageRow[];
  events: ModeEvent[];
  update?: MessageUpdate;
  /**
   * The fallback title: set unless the conversation has one, and filled into the `title_complete`
   * event among `events`; that event is dropped when the message needs no title.
   */
  title?: string;
  /**
   * The conversation's title from the title call: set unless the conversation has one, whatever the
   * message's state (a conversation keeps its title after a failed turn); stored together with the
   * title call's outcome.
   */
  conversationTitle?: string;
  /**
   * The title call's outcome (stage 'title'), stored with `conversationTitle` after the stage's own
   * outcomes (not when they answer 'replaced'); one stored already is kept.
   */
  titleOutcome?: CallOutcome;
  /**
   * Answer 'written' with what the message then holds, as a load reads it (`stored`): a commit that
   * moves the message on, whose next stage this process runs from the answer instead of a load.
   */
  loaded?: boolean;
}

/**
 * What a commit's write says it stored (StageWrite.loaded), as far as the write changed what a load
 * reads, in the load's order and shapes: with the state loaded before, what a load now returns.
 */
export interface StoredStages {
  /** The least stage order among the rows written (null: none were): `rows` are those from it on. */
  from: number | null;
  /** The message's stage rows of stage order `from` and later (rows of an earlier one come first). */
  rows: StageRow[];
  /** Every outcome of the write's stage and of the title call, by stage (other stages' are unchanged). */
  outcomes: Record<string, CallOutcome[]>;
}

export type StageWriteResult =
  | {
      kind: 'written';
      events: DeliveredEvent[];
      /** With `loaded`: what the write stored, as a load reads it. */
      stored?: StoredStages;
    }
  /**
   * An earlier run stored one of the outcomes first: the others were stored, nothing else was
   * written. `outcomes` are the stored ones of every call given, in the order given: reduce from
   * them and write again without outcomes.
   */
  | { kind: 'replaced'; outcomes: CallOutcome[] }
  /** The message has ended or moved past the stage: only the outcomes were stored. */
  | { kind: 'skipped' }
  | { kind: 'missing' };

export interface DeliberationStore {
  writeStage(messageId: string, write: StageWrite): Promise<StageWriteResult>;
  load(messageId: string, historyTurns: number): Promise<LoadedDeliberation | null>;
  loadOutcomes(messageId: string, stage: string): Promise<CallOutcome[]>;
  eventsAfter(messageId: string, afterSeq: number): Promise<DeliveredEvent[]>;
  /** Queued or running messages whose row has not changed for `idleMs`. */
  unfinishedMessages(idleMs: number): Promise<UnfinishedMessage[]>;
}

export interface EventPublisher {
  publish(events: DeliveredEvent[]): Promise<void>;
}

export type StageJobState = 'pending' | 'missing' | 'completed' | 'failed';

export interface EnqueueOptions {
  /** Batch items run behind interactive deliberations (00-shared.md §8, batches). */
  background?: boolean;
  /** A new conversation's first stage: the message as stored, for the job's first start (no load). */
  start?: FirstStageStart;
}

export interface StageScheduler {
  enqueueStage(messageId: string, stage: string, options?: EnqueueOptions): Promise<void>;
  stageJobState(messageId: string, stage: string): Promise<StageJobState>;
  /** Enqueues the stage again even if a finished job with the same id is still kept. */
  rescheduleStage(messageId: string, stage: string, options?: EnqueueOptions): Promise<void>;
}

export interface UnfinishedMessage {
  messageId: string;
  stage: string;
  batchId: string | null;
}

/** Finds the definition of a mode by name (the registry in modes/index.ts). */
export type ModeRegistry = (mode: ModeName) => AnyModeDefinition | undefined;

/** Whether a member's answer counts for the gate: the mode can read it (its parser finds a vote, an estimate…). */
export type CountsAsAnswered = (outcome: SuccessfulCall) => boolean;

/** When a stage of several members goes on without the calls still running. */
export interface StageGate {
  /** Go on once this many members answered; null: wait for every member (unless the deadline). */
  quorum: number | null;
  /** After this long, go on as soon as `minimum` members answered; null: no deadline. */
  deadlineMs: number | null;
  /** The mode's minimum of answers for the stage (e.g. council's 2 answers to rank). */
  minimum: number;
  /**
   * Which answers count toward `quorum` and `minimum`: those the stage's reduce can use. Pure over
   * the outcome, so a retried stage counts its stored outcomes the same way.
   */
  counts: CountsAsAnswered;
}
