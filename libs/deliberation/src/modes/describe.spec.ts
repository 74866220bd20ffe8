import type { ModeName } from '@conclave/contracts';
import {
  DESCRIBED_BEFORE,
  MINIMAL_MODE_CONFIG as MINIMAL,
  OPERATOR_DEFAULTS as DEFAULTS,
} from './fixtures/described-modes';
import { MODES } from './index';

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

  it('describes every mode, byte for byte, as GET /api/modes did before describe() was derived', () => {
    expect(Object.keys(MODES).sort()).toEqual(Object.keys(DESCRIBED_BEFORE).sort());
    for (const [mode, definition] of Object.entries(MODES)) {
      expect(JSON.stringify(definition!.describe(DEFAULTS))).toBe(
        JSON.stringify(DESCRIBED_BEFORE[mode as ModeName]),
      );
    }
  });
});
