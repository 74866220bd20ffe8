import type { ModeFacts, ModeName } from '@conclave/contracts';
import type { ChatMessage } from '@conclave/llm';
import type {
  CallOutcome,
  DeliberationContext,
  Headline,
  ModeDefinition,
  ModeEvent,
  PlannedCall,
  StageReduction,
  StageRow,
  SuccessfulCall,
} from '../engine/types';
import type { StageGate } from '../engine/quorum';
import { describeConfig, type ModeConfigDefinition } from './mode-config';

/**
 * What one stage of a mode does. Each function also receives the stage's name, for stages that
 * share an entry (Delphi's `round_1`, `round_2`, …).
 */
export interface StageBehaviour<Config> {
  /** The events that open the stage. */
  start(ctx: DeliberationContext<Config>, stage: string): ModeEvent[];
  /** The model calls the stage makes; none for a stage that only reduces. */
  calls(ctx: DeliberationContext<Config>, stage: string): PlannedCall[];
  /** A stage of several members that may go on without its slowest (quorum, deadline). */
  gate?(ctx: DeliberationContext<Config>, calls: PlannedCall[], stage: string): StageGate | null;
  /** Whether a single seat's answer is usable (else its next fallback is asked). */
  accepts?(ctx: DeliberationContext<Config>, outcome: SuccessfulCall, stage: string): boolean;
  /** Events to deliver as soon as one call settles (jury's `juror_complete`), before the stage ends. */
  settled?(ctx: DeliberationContext<Config>, outcome: CallOutcome, stage: string): ModeEvent[];
  /** The stage's rows, events and where the deliberation goes next, from the settled calls. */
  reduce(ctx: DeliberationContext<Config>, outcomes: CallOutcome[], stage: string): StageReduction;
}

/** A mode's stages, every one of them named: a stage left out does not compile. */
export type StageTable<Stage extends string, Config> = Record<Stage, StageBehaviour<Config>>;

/**
 * A mode as it is written: its name, what the rest of the system knows of it (`facts`), its config
 * definition, its stage table, and how it reads its rows.
 */
export interface ModeSpec<Config extends { timeoutMs: number }, Result, Stage extends string> {
  mode: ModeName;
  /**
   * Summary, roles, final stage, roster fields: data any consumer may read (ModeFacts, from the
   * mode's `<mode>.facts.ts`, which `modes/facts.ts` also registers). Every shipped mode gives
   * them (modes/registry.spec.ts); a stage table under test may leave them out.
   */
  facts?: ModeFacts;
  multiTurn: boolean;
  /** Whether the 600 s whole-deliberation cap of 00-shared.md §2 applies (01-council.md §F: not for council). */
  enforcesDeliberationCap: boolean;
  config: ModeConfigDefinition<Config>;
  firstStage: Stage;
  stages: StageTable<Stage, Config>;
  /** The table entry a stage name runs, undefined for none; by default the entry of that name. */
  stageOf?(stage: string): Stage | undefined;
  /** The message for a missing question, when the mode's document words it differently. */
  questionRequiredMessage?: string;
  /** What the user message stores (00-shared.md §5); the question unless the mode says otherwise. */
  userContent?(question: string, config: Config): string;
  /** The model that writes the conversation title, and its prompt. */
  titleCall(ctx: DeliberationContext<Config>): { model: string; messages: ChatMessage[] };
  /** Rebuilds the mode's Result (partial while running) from stored rows alone. */
  load(rows: StageRow[], config: Config, title: string | null): Result;
  /** The headline of a (possibly partial) result, for batch exports. */
  headline(result: Result): Headline;
}

/**
 * The ModeDefinition the engine runs, from a mode as it is written: each stage method looks the
 * stage up in the table (an unknown stage is an error here, and only here), the config methods
 * and GET /api/modes' description come from the config definition, and the per-call timeout is
 * the config's `timeoutMs`.
 */
export function defineMode<Config extends { timeoutMs: number }, Result, Stage extends string>(
  spec: ModeSpec<Config, Result, Stage>,
): ModeDefinition<Config, Result> {
  const { mode, facts, multiTurn, config, stages } = spec;
  if (facts && facts.mode !== mode) throw new Error(`${mode} is given the facts of ${facts.mode}`);
  const stageOf =
    spec.stageOf ?? ((stage: string) => (Object.hasOwn(stages, stage) ? (stage as Stage) : undefined));
  const behaviour = (stage: string): StageBehaviour<Config> => {
    const entry = stageOf(stage);
    if (entry === undefined || !Object.hasOwn(stages, entry)) {
      throw new Error(`${mode} has no stage "${stage}"`);
    }
    return stages[entry];
  };
  return {
    mode,
    ...(facts ? { facts } : {}),
    multiTurn,
    enforcesDeliberationCap: spec.enforcesDeliberationCap,
    firstStage: spec.firstStage,
    configSchema: config.schema,
    resolveConfig: (request, defaults) => config.resolve(request, defaults),
    ...(spec.questionRequiredMessage !== undefined
      ? { questionRequiredMessage: spec.questionRequiredMessage }
      : {}),
    ...(spec.userContent ? { userContent: spec.userContent } : {}),
    timeoutMs: (resolved) => resolved.timeoutMs,
    startEvents: (stage, ctx) => behaviour(stage).start(ctx, stage),
    plan: (stage, ctx) => behaviour(stage).calls(ctx, stage),
    gate: (stage, ctx, calls) => behaviour(stage).gate?.(ctx, calls, stage) ?? null,
    accepts: (stage, ctx, outcome) => behaviour(stage).accepts?.(ctx, outcome, stage) ?? true,
    callEvents: (stage, ctx, outcome) => behaviour(stage).settled?.(ctx, outcome, stage) ?? [],
    reduce: (stage, ctx, outcomes) => behaviour(stage).reduce(ctx, outcomes, stage),
    titleCall: spec.titleCall,
    load: spec.load,
    describe: (defaults) => describeConfig(mode, multiTurn, config, defaults),
    headline: spec.headline,
  };
}
