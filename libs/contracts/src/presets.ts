import type { ModeName } from './modes';

/**
 * A preset's name: it is part of the model id `conclave/preset/<name>` that /v1/models lists, so
 * it has no slashes, spaces or capitals.
 */
export const PRESET_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** What PRESET_NAME_PATTERN asks, in words (the error of a name that does not match it). */
export const PRESET_NAME_RULE =
  'name must be 1 to 64 characters: lowercase letters, digits, ".", "_" or "-", starting with a letter or ' +
  'digit (it is part of the model id conclave/preset/<name>, so no slashes, spaces or capitals)';

/** The prefix of a preset's model id on the OpenAI-compatible surface (`conclave/preset/<name>`). */
export const PRESET_MODEL_PREFIX = 'conclave/preset/';

/** The most presets one user keeps. */
export const PRESETS_PER_USER = 100;

/**
 * A saved mode, roster and options, per user (`/api/presets`): a deliberation request without its
 * question (nor jury's content), as it was saved. `POST /api/deliberations` with `preset: <name>`
 * starts from it; the request's own fields win, `modeConfig` merged key by key.
 */
export interface Preset {
  name: string;
  mode: ModeName;
  modeConfig?: Record<string, unknown>;
  /** Council only, as in a deliberation request (the roster may also sit in `modeConfig`). */
  councilModels?: string[];
  chairmanModel?: string;
  createdAt: string;
  updatedAt: string;
}

/**
 * `POST /api/presets`: creates the preset, or replaces the user's preset of that name. The fields
 * other than `name` are a deliberation request's and are validated as one (same names, bounds and
 * messages); `question`, `conversationId` and jury's `modeConfig.content` / `originalQuestion`
 * belong to each deliberation, not to a preset, and are refused.
 */
export interface SavePresetRequest {
  name: string;
  /** Default `council`, as in a deliberation request. */
  mode?: ModeName;
  modeConfig?: Record<string, unknown>;
  councilModels?: string[];
  chairmanModel?: string;
}
