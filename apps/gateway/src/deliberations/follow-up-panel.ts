import type { ModeName } from '@conclave/contracts';
import { layerRequest } from '../presets/apply-preset';

/** The panel a conversation's last turn ran with: its mode and its resolved mode config. */
export interface ConversationPanel {
  mode: ModeName;
  config: unknown;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

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
): Record<string, unknown> {
  if (request.mode !== undefined && request.mode !== null && request.mode !== panel.mode) return request;
  const stored = isPlainObject(panel.config) ? panel.config : {};
  const modeConfig = Object.fromEntries(
    Object.entries(stored).filter(([field, value]) => configFields.has(field) && value !== undefined),
  );
  return layerRequest({ mode: panel.mode, modeConfig }, request);
}
