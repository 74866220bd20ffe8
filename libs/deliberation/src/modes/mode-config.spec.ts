import { getMetadataStorage } from 'class-validator';
import { councilConfig } from './council/council.config';
import { debateConfig } from './debate/debate.config';
import { MINIMAL_MODE_CONFIG, OPERATOR_DEFAULTS as DEFAULTS } from './fixtures/described-modes';
import { delphiConfig } from './delphi/delphi.config';
import { juryConfig } from './jury/jury.config';
import { optionDescription, type ModeConfigDefinition } from './mode-config';
import { voteConfig } from './vote/vote.config';

const CONFIGS: [string, ModeConfigDefinition<unknown>][] = [
  ['council', councilConfig as ModeConfigDefinition<unknown>],
  ['vote', voteConfig as ModeConfigDefinition<unknown>],
  ['jury', juryConfig as ModeConfigDefinition<unknown>],
  ['debate', debateConfig as ModeConfigDefinition<unknown>],
  ['delphi', delphiConfig as ModeConfigDefinition<unknown>],
];

/** The bound a DTO's validators put on a field: `min`/`max`, or the array sizes. */
function validatorBounds(schema: new () => object, field: string) {
  const constraint = (...names: string[]) =>
    getMetadataStorage()
      .getTargetValidationMetadatas(schema, '', true, false)
      .find((m) => m.propertyName === field && names.includes(m.name ?? ''))?.constraints?.[0] as
      number | undefined;
  return { min: constraint('min', 'arrayMinSize'), max: constraint('max', 'arrayMaxSize') };
}

describe('optionDescription', () => {
  it('appends the range, its unit, and a whole bound of a fraction with one decimal', () => {
    expect(optionDescription({ field: 'f', type: 'integer', description: 'rounds' })).toBe('rounds');
    expect(
      optionDescription({
        field: 'f',
        type: 'integer',
        description: 'timeout',
        range: { min: 1000, max: 600_000, unit: 'ms' },
      }),
    ).toBe('timeout (1000-600000 ms)');
    expect(
      optionDescription({
        field: 'f',
        type: 'number',
        description: 'cv',
        range: { min: 0.01, max: 1, fractional: true },
      }),
    ).toBe('cv (0.01-1.0)');
    expect(
      optionDescription({ field: 'f', type: 'number', description: 'share', range: { min: 50, max: 100 } }),
    ).toBe('share (50-100)');
  });
});

describe.each(CONFIGS)('%s config definition', (mode, config) => {
  it("describes the bounds its DTO's validators enforce", () => {
    for (const option of config.options) {
      if (!option.range) continue;
      expect(validatorBounds(config.schema, option.field)).toEqual({
        min: option.range.min,
        max: option.range.max,
      });
    }
    for (const rule of config.roster) {
      const bounds = validatorBounds(config.schema, rule.field.replace(/^modeConfig\./, ''));
      // A single-model role has no array bounds in the DTO.
      if (bounds.min === undefined && bounds.max === undefined) continue;
      expect(bounds).toEqual({ min: rule.min, max: rule.max });
    }
  });

  it('shows as defaults what a request that leaves those fields out gets', () => {
    const modeConfig = MINIMAL_MODE_CONFIG[mode] ?? {};
    const resolved = config.resolve({ question: 'How many?', modeConfig }, DEFAULTS);
    if (!resolved.ok) throw new Error(`minimal ${mode} request refused: ${JSON.stringify(resolved.fields)}`);
    const defaults = config.defaults(DEFAULTS);
    expect(Object.keys(defaults).length).toBeGreaterThan(0);
    expect(resolved.config).toMatchObject(defaults);
  });
});
