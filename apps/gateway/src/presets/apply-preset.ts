import { MODE_NAMES, type Preset } from '@conclave/contracts';
import type { FieldErrors } from '@conclave/deliberation';

export type PresetMerge = { ok: true; body: Record<string, unknown> } | { ok: false; fields: FieldErrors };

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Council's roster fields, which a request may give at top level or in `modeConfig`. */
const TWO_PLACE_FIELDS = ['councilModels', 'chairmanModel'] as const;

/**
 * A deliberation request over a preset: the request's own fields win, `modeConfig` merged key by
 * key, and a roster field the request gives (council's `councilModels` / `chairmanModel`, at top
 * level or in `modeConfig`) replaces the preset's wherever the preset had it. The result has no
 * `preset` field; it is validated as any request. A request whose mode differs from the preset's
 * is refused, naming `mode`; a mode that is not one is left for the validator to name.
 */
export function mergePreset(preset: Preset, body: Record<string, unknown>): PresetMerge {
  const { preset: _name, ...request } = body;
  if (
    typeof request.mode === 'string' &&
    (MODE_NAMES as readonly string[]).includes(request.mode) &&
    request.mode !== preset.mode
  ) {
    return {
      ok: false,
      fields: {
        mode: `preset "${preset.name}" is a ${preset.mode} preset; a ${request.mode} request cannot use it (leave mode out or send ${preset.mode})`,
      },
    };
  }
  const ownConfig = isPlainObject(request.modeConfig) ? request.modeConfig : {};
  const base: Record<string, unknown> = { mode: preset.mode };
  const baseConfig: Record<string, unknown> = { ...(preset.modeConfig ?? {}) };
  if (preset.councilModels !== undefined) base.councilModels = preset.councilModels;
  if (preset.chairmanModel !== undefined) base.chairmanModel = preset.chairmanModel;
  for (const field of TWO_PLACE_FIELDS) {
    if (request[field] !== undefined || ownConfig[field] !== undefined) {
      delete base[field];
      delete baseConfig[field];
    }
  }
  const merged: Record<string, unknown> = { ...base, ...request };
  if (request.mode === undefined || request.mode === null) merged.mode = preset.mode;
  // A modeConfig of the wrong type is left as it is, for the validator to name.
  if (request.modeConfig === undefined || request.modeConfig === null) {
    if (Object.keys(baseConfig).length > 0) merged.modeConfig = baseConfig;
    else delete merged.modeConfig;
  } else if (isPlainObject(request.modeConfig)) {
    merged.modeConfig = { ...baseConfig, ...request.modeConfig };
  }
  return { ok: true, body: merged };
}
