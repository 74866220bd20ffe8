import type { Preset } from '@conclave/contracts';
import { mergePreset } from './apply-preset';

const at = '2025-01-01T00:00:00.000Z';
const preset = (fields: Partial<Preset> = {}): Preset => ({
  name: 'trio',
  mode: 'council',
  createdAt: at,
  updatedAt: at,
  ...fields,
});

const merged = (p: Preset, body: Record<string, unknown>) => {
  const outcome = mergePreset(p, body);
  if (!outcome.ok) throw new Error(`refused: ${JSON.stringify(outcome.fields)}`);
  return outcome.body;
};

describe('mergePreset', () => {
  it("gives a request without fields of its own the preset's mode, roster and options, and drops `preset`", () => {
    const p = preset({
      councilModels: ['sim/a', 'sim/b'],
      chairmanModel: 'sim/c',
      modeConfig: { timeoutMs: 5000 },
    });
    expect(merged(p, { question: 'Q?', preset: 'trio' })).toEqual({
      question: 'Q?',
      mode: 'council',
      councilModels: ['sim/a', 'sim/b'],
      chairmanModel: 'sim/c',
      modeConfig: { timeoutMs: 5000 },
    });
  });

  it("lets the request's own fields win, merging modeConfig key by key", () => {
    const p = preset({
      mode: 'delphi',
      modeConfig: { panelistModels: ['sim/a', 'sim/b', 'sim/c'], maxRounds: 3, timeoutMs: 5000 },
    });
    expect(
      merged(p, { question: 'How many?', preset: 'trio', mode: 'delphi', modeConfig: { maxRounds: 5 } }),
    ).toEqual({
      question: 'How many?',
      mode: 'delphi',
      modeConfig: { panelistModels: ['sim/a', 'sim/b', 'sim/c'], maxRounds: 5, timeoutMs: 5000 },
    });
  });

  it("replaces the preset's council roster wherever either of them gives it", () => {
    const top = preset({ councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' });
    expect(merged(top, { question: 'Q', modeConfig: { councilModels: ['sim/x', 'sim/y'] } })).toEqual({
      question: 'Q',
      mode: 'council',
      chairmanModel: 'sim/c',
      modeConfig: { councilModels: ['sim/x', 'sim/y'] },
    });
    const nested = preset({ modeConfig: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' } });
    expect(merged(nested, { question: 'Q', chairmanModel: 'sim/z' })).toEqual({
      question: 'Q',
      mode: 'council',
      chairmanModel: 'sim/z',
      modeConfig: { councilModels: ['sim/a', 'sim/b'] },
    });
  });

  it('refuses a request whose mode differs from the preset, naming mode', () => {
    const outcome = mergePreset(preset({ mode: 'jury' }), { question: 'Q', mode: 'council', preset: 'trio' });
    expect(outcome).toEqual({
      ok: false,
      fields: {
        mode: expect.stringMatching(/preset "trio" is a jury preset; a council request cannot use it/),
      },
    });
  });

  it('leaves what is not a mode, or a modeConfig of the wrong type, for the validator to name', () => {
    const p = preset({ modeConfig: { timeoutMs: 5000 } });
    expect(merged(p, { question: 'Q', mode: 'nope' }).mode).toBe('nope');
    expect(merged(p, { question: 'Q', modeConfig: 'fast' }).modeConfig).toBe('fast');
    // null is absent, as the validator takes it
    expect(merged(p, { question: 'Q', mode: null, modeConfig: null })).toEqual({
      question: 'Q',
      mode: 'council',
      modeConfig: { timeoutMs: 5000 },
    });
  });

  it('keeps a field named __proto__ as a field (for the validator to refuse), not as a prototype', () => {
    const body = JSON.parse('{"question":"Q","__proto__":{"polluted":true}}') as Record<string, unknown>;
    const out = merged(preset(), body);
    expect(Object.keys(out)).toContain('__proto__');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((out as { polluted?: unknown }).polluted).toBeUndefined();
  });
});
