import {
  PRESET_NAME_PATTERN,
  PRESET_NAME_RULE,
  type Preset,
  type SavePresetRequest,
} from '@conclave/contracts';
import { api } from './api';

/** The user's presets, by name (`GET /api/presets`). */
export const listPresets = () => api<Preset[]>('GET', '/api/presets');

/** Creates the preset, or replaces the user's preset of that name (`POST /api/presets`). */
export const savePreset = (request: SavePresetRequest) => api<Preset>('POST', '/api/presets', request);

export const deletePreset = (name: string) => api<void>('DELETE', `/api/presets/${encodeURIComponent(name)}`);

/**
 * A preset's fields as one config, as the form reads a turn's config (rosterFromConfig,
 * optionsFromConfig): council's roster may sit at top level or in `modeConfig`.
 */
export function presetConfig(preset: Preset): Record<string, unknown> {
  return {
    ...(preset.modeConfig ?? {}),
    ...(preset.councilModels !== undefined ? { councilModels: preset.councilModels } : {}),
    ...(preset.chairmanModel !== undefined ? { chairmanModel: preset.chairmanModel } : {}),
  };
}

/** What is wrong with a preset name before the server is asked, or null (the server checks it too). */
export function presetNameProblem(name: string): string | null {
  if (!name.trim()) return 'Give the preset a name';
  return PRESET_NAME_PATTERN.test(name.trim()) ? null : PRESET_NAME_RULE;
}

/** A request of the form without what belongs to each deliberation: what a preset keeps. */
export function presetRequest(name: string, request: Record<string, unknown>): SavePresetRequest {
  const { question: _q, conversationId: _c, ...rest } = request;
  const preset = { ...rest, name: name.trim() } as SavePresetRequest & Record<string, unknown>;
  if (preset.modeConfig) {
    const { content: _content, originalQuestion: _original, ...options } = preset.modeConfig;
    if (Object.keys(options).length > 0) preset.modeConfig = options;
    else delete preset.modeConfig;
  }
  return preset;
}
