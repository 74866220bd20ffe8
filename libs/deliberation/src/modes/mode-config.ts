import type { ModeDescription } from '@conclave/contracts';
import type { ModeDefaults, RequestEnvelope, ResolvedConfig } from '../engine/types';

/**
 * The bounds a field accepts. Written once in a mode's *.config.ts: its DTO's validators read
 * them, and GET /api/modes shows them after the option's description, as `(min-max unit)`.
 */
export interface Range {
  min: number;
  max: number;
  unit?: string;
  /** A fraction's range: a whole bound is shown with one decimal (`0.01-1.0`). */
  fractional?: boolean;
}

/** A role of the mode's roster and the request field that names its models. */
export interface RosterRule {
  role: string;
  field: string;
  min: number;
  max: number;
}

/** A `modeConfig` option as GET /api/modes describes it. */
export interface OptionRule {
  field: string;
  type: string;
  /** What the option does; its range, if it has one, is appended. */
  description: string;
  range?: Range;
}

/**
 * A mode's configuration, defined once in its *.config.ts: the DTO that validates `modeConfig`,
 * the defaults a request falls back to, the resolution of a request, and what GET /api/modes says.
 */
export interface ModeConfigDefinition<Config> {
  /** Class-validator DTO describing `modeConfig`. */
  schema: new () => object;
  roster: readonly RosterRule[];
  options: readonly OptionRule[];
  /**
   * What a request that names none of these fields gets: `resolve` falls back to it, and
   * GET /api/modes shows it (in this order) and gives each option found here as its default.
   */
  defaults(defaults: ModeDefaults): Partial<Config>;
  resolve(request: RequestEnvelope, defaults: ModeDefaults): ResolvedConfig<Config>;
}

const bound = (value: number, range: Range): string =>
  range.fractional && Number.isInteger(value) ? value.toFixed(1) : String(value);

/** `per-call timeout (1000-600000 ms)`: the description with the option's range, if any. */
export function optionDescription({ description, range }: OptionRule): string {
  if (!range) return description;
  const unit = range.unit ? ` ${range.unit}` : '';
  return `${description} (${bound(range.min, range)}-${bound(range.max, range)}${unit})`;
}

/** What GET /api/modes says of a mode: all of it read from the mode's config definition. */
export function describeConfig<Config>(
  mode: ModeDescription['mode'],
  multiTurn: boolean,
  config: ModeConfigDefinition<Config>,
  defaults: ModeDefaults,
): ModeDescription {
  const shown: Record<string, unknown> = { ...config.defaults(defaults) };
  return {
    mode,
    available: true,
    multiTurn,
    roster: config.roster.map((rule) => ({ ...rule })),
    defaults: shown,
    options: config.options.map((option) => ({
      field: option.field,
      type: option.type,
      description: optionDescription(option),
      ...(option.field in shown ? { default: shown[option.field] } : {}),
    })),
  };
}
