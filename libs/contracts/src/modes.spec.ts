import { modelsInDefaults, type ModeDefaults } from './modes';

describe('modelsInDefaults', () => {
  it('lists the models of every default roster, mode by mode, repeats kept', () => {
    const defaults: ModeDefaults = {
      timeoutMs: 1000,
      council: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' },
      jury: { jurorModels: ['sim/d'], foremanModel: 'sim/e' },
      debate: { models: ['sim/a', 'sim/f'] },
      delphi: { panelistModels: ['sim/g'], facilitatorModel: 'sim/h' },
      vote: { models: ['sim/i'] },
    };
    expect(modelsInDefaults(defaults)).toEqual([
      'sim/a',
      'sim/b',
      'sim/c',
      'sim/d',
      'sim/e',
      'sim/a',
      'sim/f',
      'sim/g',
      'sim/h',
      'sim/i',
    ]);
  });
});
