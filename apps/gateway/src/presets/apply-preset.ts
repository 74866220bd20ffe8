import { MODE_NAMES, type Preset } from '@conclave/contracts';
import type { FieldErrors } from '@conclave/deliberation';

export type PresetMerge = { ok: true; body: Record<string, unknown> } | { ok: false; fields: FieldErrors };

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Council's roster fields, which a request may give at top level or in `modeConfig`. */
const TWO_PLACE_FIELDS = ['councilModels', 'chairmanModel'] as const;

/** The fields a request is laid over: a preset's, or a conversation's last turn's. */
export interface RequestBase {
  mode: string;
  modeConfig?: Record<string, unknown>;
  councilModels?: string[];
  chairmanModel?: string;
}

/**
 * A request laid over a base: the request's own fields win, `modeConfig` merged key by key, and a
 * roster field the request gives (council's `councilModels` / `chairmanModel`, at top level or in
 * `modeConfig`) replaces the base's wherever the base had it. The request's mode is not checked
 * against the base's here: the caller decides what a different mode means.
 */
export function layerRequest(base: RequestBase, request: Record<string, unknown>): Record<string, unknown> {
  const ownConfig = isPlainObject(request.modeConfig) ? request.modeConfig : {};
  const top: Record<string, unknown> = { mode: base.mode };
  const baseConfig: Record<string, unknown> = { ...(base.modeConfig ?? {}) };
  if (base.councilModels !== undefined) top.councilModels = base.councilModels;
  if (base.chairmanModel !== undefined) top.chairmanModel = base.chairmanModel;
  for (const field of TWO_PLACE_FIELDS) {
    if (request[field] !== undefined || ownConfig[field] !== undefined) {
      delete top[field];
      delete baseConfig[field];
    }
  }
  const merged: Record<string, unknown> = { ...top, ...request };
  if (request.mode === undefined || request.mode === null) merged.mode = base.mode;
  // A modeConfig of the wrong type is left as it is, for the validator to name.
  if (request.modeConfig === undefined || request.modeConfig === null) {
    if (Object.keys(baseConfig).length > 0) merged.modeConfig = baseConfig;
    else delete merged.modeConfig;
  } else if (isPlainObject(request.modeConfig)) {
    merged.modeConfig = { ...baseConfig, ...request.modeConfig };
  }
  return merged;
}

/**
 * A deliberation request over a preset (`layerRequest`). The result has no `preset` field; it is
 * validated as any request. A request whose mode differs from the preset's is refused, naming
 * `mode`; a mode that is not one is left for the validator to name.
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
  return { ok: true, body: layerRequest(preset, request) };
}
