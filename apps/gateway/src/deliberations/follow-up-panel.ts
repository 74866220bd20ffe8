import type { ModeName } from '@conclave/contracts';
import { isPlainObject, layerRequest } from '../presets/apply-preset';

/** The panel a conversation's last turn ran with: its mode and its resolved mode config. */
export interface ConversationPanel {
  mode: ModeName;
  config: unknown;
}

/** A follow-up request with its conversation's panel beneath it, and which fields it took from there. */
export interface FollowUpRequest {
  request: Record<string, unknown>;
  /** The `modeConfig.<field>` paths that came from the conversation, not from the turn. */
  inherited: string[];
}

/**
 * A follow-up request with its conversation's panel beneath it: a turn that names only the
 * conversation runs in the conversation's mode with the last turn's roster and options; whatever
 * the turn names itself wins, field by field (as over a preset). Only fields the mode's config
 * takes (`configFields`) are carried over. A turn that names another mode is left as it is: the
 * follow-up's admission refuses it, naming both modes.
 */
export function withConversationPanel(
  panel: ConversationPanel,
  request: Record<string, unknown>,
  configFields: ReadonlySet<string>,
): FollowUpRequest {
  if (request.mode !== undefined && request.mode !== null && request.mode !== panel.mode)
    return { request, inherited: [] };
  const stored = isPlainObject(panel.config) ? panel.config : {};
  const modeConfig = Object.fromEntries(
    Object.entries(stored).filter(([field, value]) => configFields.has(field) && value !== undefined),
  );
  const layered = layerRequest({ mode: panel.mode, modeConfig }, request);
  const own = isPlainObject(request.modeConfig) ? request.modeConfig : {};
  const layeredConfig = isPlainObject(layered.modeConfig) ? layered.modeConfig : {};
  const inherited = Object.keys(layeredConfig)
    .filter((field) => !(field in own) && field in modeConfig)
    .map((field) => `modeConfig.${field}`);
  return { request: layered, inherited };
}

/** The request without the given `modeConfig.<field>` paths. */
export function withoutConfigFields(
  request: Record<string, unknown>,
  paths: string[],
): Record<string, unknown> {
  if (!isPlainObject(request.modeConfig)) return request;
  const modeConfig = { ...request.modeConfig };
  for (const path of paths) delete modeConfig[path.replace(/^modeConfig\./, '')];
  return { ...request, modeConfig };
}
