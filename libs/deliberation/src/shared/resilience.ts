import type { StageGateOptions } from '@conclave/contracts';
import {
  ArrayMaxSize,
  ArrayUnique,
  IsArray,
  IsInt,
  IsNumber,
  IsOptional,
  IsPositive,
  Max,
  Min,
} from 'class-validator';
import type { FieldErrors } from '../engine/types';
import type { OptionRule, Range } from '../modes/mode-config';
import { IsModelId } from './validation';

/**
 * The request fields of deadlines, quorum and fallbacks (an extension to the mode documents; see
 * docs/ARCHITECTURE.md). Every mode's DTO declares them with these decorators and resolves them
 * with the functions below, so their rules and messages are the same in every mode.
 */

export const STAGE_DEADLINE_MS: Range = { min: 1000, max: 600_000, unit: 'ms' };
export const MAX_FALLBACKS = 3;

/** Applies decorators in the order given: the first is checked first (the type check). */
const checkedInOrder =
  (...decorators: PropertyDecorator[]): PropertyDecorator =>
  (target, key) => {
    for (const decorate of decorators) decorate(target, key);
  };

/** `modeConfig.quorum`: a count of members (k of n) or a fraction of them (0 < f < 1). */
export const QuorumOption = (maxMembers: number): PropertyDecorator =>
  checkedInOrder(
    IsOptional(),
    IsNumber({ allowNaN: false, allowInfinity: false }),
    IsPositive({ message: 'quorum must be a positive number: a count of members, or a fraction below 1' }),
    Max(maxMembers),
  );

/** `modeConfig.stageDeadlineMs`. */
export const StageDeadlineOption = (): PropertyDecorator =>
  checkedInOrder(IsOptional(), IsInt(), Min(STAGE_DEADLINE_MS.min), Max(STAGE_DEADLINE_MS.max));

/** `modeConfig.<role>Fallbacks`: model ids asked in turn when the seat's model fails. */
export const FallbacksOption = (): PropertyDecorator =>
  checkedInOrder(
    IsOptional(),
    IsArray(),
    ArrayMaxSize(MAX_FALLBACKS),
    ArrayUnique({ message: '$property must not name the same model twice' }),
    IsModelId({ each: true }),
  );

/** What GET /api/modes says of the two gate options. */
export const gateOptionRules = (membersName: string, minimum: number): OptionRule[] => [
  {
    field: 'quorum',
    type: 'number',
    description:
      `each stage of ${membersName} goes on once this many answered (k of n, at least ${minimum}), ` +
      'or this fraction of them (0 < f < 1); the rest are cut',
  },
  {
    field: 'stageDeadlineMs',
    type: 'integer',
    description: `after this long a stage of ${membersName} goes on once ${minimum} answered; the rest are cut`,
    range: STAGE_DEADLINE_MS,
  },
];

export const fallbackOptionRule = (field: string, role: string): OptionRule => ({
  field,
  type: 'string[]',
  description: `models asked in turn when the ${role} fails (at most ${MAX_FALLBACKS})`,
});

/**
 * The gate options of a request, checked against the roster: a count must be a whole number from
 * the mode's minimum to the number of members. Only the options given are returned (a config
 * without them runs as the mode documents say).
 */
export function resolveGateOptions(
  given: StageGateOptions,
  roster: { size: number; members: string; minimum: number },
  fields: FieldErrors,
): StageGateOptions {
  const { quorum, stageDeadlineMs } = given;
  if (typeof quorum === 'number' && quorum >= 1) {
    if (!Number.isInteger(quorum)) {
      fields['modeConfig.quorum'] =
        'quorum must be a whole number of members (k of n) or a fraction between 0 and 1';
    } else if (quorum < roster.minimum) {
      fields['modeConfig.quorum'] =
        `quorum ${quorum} is below the mode's minimum of ${roster.minimum} answers from the ${roster.members}`;
    } else if (quorum > roster.size) {
      fields['modeConfig.quorum'] = `quorum ${quorum} is more than the ${roster.size} ${roster.members}`;
    }
  }
  return {
    ...(typeof quorum === 'number' ? { quorum } : {}),
    ...(typeof stageDeadlineMs === 'number' ? { stageDeadlineMs } : {}),
  };
}

/**
 * A seat's fallbacks, checked: none may be the seat's own model, nor one of `excluded` (a jury's
 * jurors, Delphi's panelists: the foreman and facilitator sit apart). Undefined when none given.
 */
export function resolveFallbacks(
  field: string,
  fallbacks: string[] | undefined,
  seat: { model: string; field: string },
  fields: FieldErrors,
  excluded?: { models: readonly string[]; why: string },
): string[] | undefined {
  if (!Array.isArray(fallbacks)) return undefined;
  const path = `modeConfig.${field}`;
  if (fallbacks.includes(seat.model)) {
    fields[path] = `${field} must not repeat ${seat.field} (${seat.model}): it is asked first`;
  } else if (excluded) {
    const clash = fallbacks.find((model) => excluded.models.includes(model));
    if (clash) fields[path] = `${field} must not name ${clash}: ${excluded.why}`;
  }
  return fallbacks.length > 0 ? [...fallbacks] : undefined;
}
