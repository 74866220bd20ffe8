import type { ModeDefaults } from '../engine/types';
import { MODES } from './index';

/** An operator's defaults that differ from every built-in figure, so a restated constant shows. */
const DEFAULTS: ModeDefaults = {
  timeoutMs: 45_000,
  council: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/chair' },
  jury: { jurorModels: ['sim/a', 'sim/b', 'sim/c'], foremanModel: 'sim/f' },
  debate: { models: ['sim/a', 'sim/b'] },
  delphi: { panelistModels: ['sim/a', 'sim/b', 'sim/c'], facilitatorModel: 'sim/f' },
  vote: { models: ['sim/a', 'sim/b', 'sim/c'] },
};

/** The smallest valid request of each mode, leaving every option to its default. */
const MINIMAL: Record<string, Record<string, unknown>> = {
  jury: { content: 'Some content' },
};

describe('GET /api/modes describes what the server will use', () => {
  it.each(Object.entries(MODES))(
    '%s: the described default timeout is the one a request without timeoutMs gets',
    (mode, definition) => {
      const description = definition!.describe(DEFAULTS);
      const resolved = definition!.resolveConfig(
        { question: 'How many?', modeConfig: MINIMAL[mode] ?? {} },
        DEFAULTS,
      );
      if (!resolved.ok)
        throw new Error(`minimal ${mode} request refused: ${JSON.stringify(resolved.fields)}`);
      const used = definition!.timeoutMs(resolved.config);
      expect(description.defaults.timeoutMs).toBe(used);
      expect(description.options.find((o) => o.field === 'timeoutMs')?.default).toBe(used);
    },
  );
});
