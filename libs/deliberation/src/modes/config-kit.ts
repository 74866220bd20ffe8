import type { StageGateOptions } from '@conclave/contracts';
import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsInt,
  IsNumber,
  IsOptional,
  Max,
  Min,
} from 'class-validator';
import type { FieldErrors, ModeDefaults, RequestEnvelope } from '../engine/types';
import {
  FallbacksOption,
  QuorumOption,
  StageDeadlineOption,
  fallbackOptionRule,
  gateOptionRules,
  resolveFallbacks,
  resolveGateOptions,
} from '../shared/resilience';
import { IsModelId } from '../shared/validation';
import type { ModeConfigDefinition, OptionRule, Range, RosterRule } from './mode-config';

/**
 * What every mode's *.config.ts writes the same way: its panel and timeout fields, its roster and
 * common options, and the resolution of its timeout, deadline, quorum and fallback options. Each decorator here applies class-validator's
 * decorators in the order a mode's DTO listed them (bottom-up: the first given is checked first),
 * so the checks and their messages are the mode's own.
 */

export type { ModeConfigDefinition, Range } from './mode-config';
export { IsModelId } from '../shared/validation';

/** Applies decorators in the order given: the first is checked first (the type check). */
const checkedInOrder =
  (...decorators: PropertyDecorator[]): PropertyDecorator =>
  (target, key) => {
    for (const decorate of decorators) decorate(target, key);
  };

/**
 * A roster field: an optional array of `min` to `max` model ids (with the mode's messages for too
 * few and too many; `unique`: the message for a model named twice, where that is refused).
 */
export const PanelOption = (rule: {
  min: number;
  max: number;
  tooFew?: string;
  tooMany?: string;
  unique?: string;
}): PropertyDecorator =>
  checkedInOrder(
    IsOptional(),
    IsArray(),
    ArrayMinSize(rule.min, rule.tooFew !== undefined ? { message: rule.tooFew } : undefined),
    ArrayMaxSize(rule.max, rule.tooMany !== undefined ? { message: rule.tooMany } : undefined),
    ...(rule.unique !== undefined ? [ArrayUnique({ message: rule.unique })] : []),
    IsModelId({ each: true }),
  );

/** A single seat's model (a chairman, a facilitator): an optional model id. */
export const SeatOption = (): PropertyDecorator => checkedInOrder(IsOptional(), IsModelId());

/** `modeConfig.timeoutMs` in `range`: a whole number of ms, or (`number`) any finite number. */
export const TimeoutOption = (range: Range, type: 'integer' | 'number'): PropertyDecorator =>
  checkedInOrder(
    IsOptional(),
    type === 'integer' ? IsInt() : IsNumber({ allowNaN: false, allowInfinity: false }),
    Min(range.min),
    Max(range.max),
  );

/**
 * The base class of a mode's `modeConfig` DTO: the options every mode declares after its own —
 * `timeoutMs` in `timeout`, `quorum` up to the panel's `maxMembers`, `stageDeadlineMs` and, where
 * the mode has a single seat, that seat's fallbacks (`fallbacks`: the field's name). class-validator
 * lists a class's own fields before those it inherits, so the mode's fields are checked (and its
 * JSON Schema lists them) first, then these, in this order.
 */
export function ModeOptionsDto<Seat extends string = never>(rule: {
  timeout: Range;
  timeoutType: 'integer' | 'number';
  maxMembers: number;
  fallbacks?: Seat;
}): new () => CommonModeOptions & { [K in Seat]?: string[] } {
  class ModeOptions implements CommonModeOptions {
    @TimeoutOption(rule.timeout, rule.timeoutType)
    timeoutMs?: number;

    @QuorumOption(rule.maxMembers)
    quorum?: number;

    @StageDeadlineOption()
    stageDeadlineMs?: number;
  }
  if (rule.fallbacks !== undefined) FallbacksOption()(ModeOptions.prototype, rule.fallbacks);
  return ModeOptions as new () => CommonModeOptions & { [K in Seat]?: string[] };
}

/** The fields ModeOptionsDto declares for every mode. */
export interface CommonModeOptions {
  timeoutMs?: number;
  quorum?: number;
  stageDeadlineMs?: number;
}

/** What GET /api/modes says of `timeoutMs`. */
const timeoutOptionRule = (
  range: Range,
  type: 'integer' | 'number',
  description = 'per-call timeout',
): OptionRule => ({ field: 'timeoutMs', type, description, range });

/**
 * A mode's gate options (quorum, stage deadline) checked against its panel, and its single seat's
 * fallbacks (`seat`, where the mode has one) checked against the seat's model and the models it must
 * not be: the options given, as the resolved config holds them (gate first, then the fallbacks).
 * Problems are added to `fields`.
 */
function resolveResilience<Option extends string = never>(
  given: NoInfer<StageGateOptions & { [K in Option]?: string[] }>,
  panel: { size: number; members: string; minimum: number },
  seat: {
    option: Option;
    model: string;
    field: string;
    excluded?: { models: readonly string[]; why: string };
  } | null,
  fields: FieldErrors,
): StageGateOptions & { [K in Option]?: string[] } {
  type Resolved = StageGateOptions & { [K in Option]?: string[] };
  const gate = resolveGateOptions(given, panel, fields);
  if (!seat) return gate as Resolved;
  const fallbacks = resolveFallbacks(
    seat.option,
    (given as Partial<Record<Option, string[]>>)[seat.option],
    { model: seat.model, field: seat.field },
    fields,
    seat.excluded,
  );
  return { ...gate, ...(fallbacks ? { [seat.option]: fallbacks } : {}) } as Resolved;
}

/**
 * What a mode's own resolution of a request gives back: its own config fields, and the models of
 * its panel and its seat (null: none), against which the common options are resolved.
 */
export interface OwnResolution<Own> {
  config: Own;
  panel: readonly string[];
  seat: string | null;
}

/**
 * What a mode's *.config.ts says once of its panel, its single seat (a chairman, a foreman, a
 * facilitator: where it has one) and its timeout, and what is made of it: the DTO's base class
 * (ModeOptionsDto), the panel field's decorator, and `define`, which makes the mode's config
 * definition: its roster, its options after the mode's own ones, and the resolution of `timeoutMs`
 * and the common options after the mode's own fields.
 */
export function modeOptions<Seat extends string = never>(rule: {
  panel: RosterRule;
  seat?: RosterRule;
  /** What the gate options call the panel's members, and the fewest answers a stage goes on with. */
  gate: { members: string; minimum: number };
  /**
   * The seat's fallbacks option, what its description calls the seat, and why a panel model may
   * not stand in for it (where it may not).
   */
  fallbacks?: { option: Seat; seat: string; notFromPanel?: string };
  timeout: Range;
  /** How the DTO checks `timeoutMs`: a whole number of ms, or any finite number, rounded to ms. */
  timeoutType: 'integer' | 'number';
  /** What GET /api/modes says of `timeoutMs`, where it differs (a number the mode rounds to ms). */
  shownTimeout?: { type?: 'integer' | 'number'; description?: string };
}) {
  type Common = CommonModeOptions & { [K in Seat]?: string[] };
  const { panel, seat, gate, fallbacks } = rule;
  const roster: RosterRule[] = [panel, ...(seat ? [seat] : [])];
  const rules: OptionRule[] = [
    timeoutOptionRule(
      rule.timeout,
      rule.shownTimeout?.type ?? rule.timeoutType,
      rule.shownTimeout?.description,
    ),
    ...gateOptionRules(gate.members, gate.minimum),
    ...(fallbacks ? [fallbackOptionRule(fallbacks.option, fallbacks.seat)] : []),
  ];
  /** The seat's request field (`modeConfig.` is not repeated: its fallbacks are there too). */
  const seatField = seat?.field.replace(/^modeConfig\./, '') ?? '';
  const timeoutOf = (ms: number) => (rule.timeoutType === 'number' ? Math.round(ms) : ms);
  const resolveCommon = (
    given: Common,
    { panel: models, seat: model }: OwnResolution<unknown>,
    problems: FieldErrors,
  ) =>
    resolveResilience<Seat>(
      given,
      { size: models.length, ...gate },
      fallbacks && model !== null
        ? {
            option: fallbacks.option,
            model,
            field: seatField,
            ...(fallbacks.notFromPanel ? { excluded: { models, why: fallbacks.notFromPanel } } : {}),
          }
        : null,
      problems,
    );
  return {
    Dto: ModeOptionsDto<Seat>({
      timeout: rule.timeout,
      timeoutType: rule.timeoutType,
      maxMembers: panel.max,
      fallbacks: fallbacks?.option,
    }),
    /** The panel's field: PanelOption with the panel's size (and the mode's messages). */
    Panel: (messages: { tooFew?: string; tooMany?: string; unique?: string } = {}): PropertyDecorator =>
      PanelOption({ min: panel.min, max: panel.max, ...messages }),
    /**
     * The mode's config definition. `resolve` reads the mode's own fields of `modeConfig` (with the
     * request, for top-level fields) and adds its problems; it answers null to stop at them, else
     * its fields and models. Any problem then refuses the request with all of them.
     */
    define<
      Config extends Common & { timeoutMs: number },
      Given extends object,
      Fallback extends Partial<Config> & { timeoutMs: number },
    >(mode: {
      schema: new () => Given;
      /** The mode's own options, shown before the common ones. */
      options?: readonly OptionRule[];
      defaults: (defaults: ModeDefaults) => Fallback;
      resolve: (
        given: Partial<Given>,
        fallback: Fallback,
        problems: FieldErrors,
        request: RequestEnvelope,
      ) => OwnResolution<Omit<Config, keyof Common>> | null;
    }): ModeConfigDefinition<Config> {
      return {
        schema: mode.schema,
        roster,
        options: [...(mode.options ?? []), ...rules],
        defaults: mode.defaults,
        resolve(request, defaults) {
          const given = (request.modeConfig ?? {}) as Partial<Given> & Common;
          const fallback = mode.defaults(defaults);
          const problems: FieldErrors = {};
          const own = mode.resolve(given, fallback, problems, request);
          if (own === null) return { ok: false, fields: problems };
          const common = resolveCommon(given, own, problems);
          if (Object.keys(problems).length > 0) return { ok: false, fields: problems };
          const timeoutMs = timeoutOf(given.timeoutMs ?? fallback.timeoutMs);
          return { ok: true, config: { ...own.config, timeoutMs, ...common } as Config };
        },
      };
    },
  };
}
