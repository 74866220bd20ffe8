import { MODE_NAMES } from '@conclave/contracts';
import { deliberateInMemory, TEST_DEFAULTS } from '../testing/deliberate';
import { MODE_FACTS, MODES, modeDefinition } from '.';
import { modeFacts } from './facts';

/** What each mode's run needs beyond the defaults (jury evaluates content). */
const REQUESTS: Record<string, { question: string; modeConfig?: Record<string, unknown> }> = {
  council: { question: 'Which sorting algorithm suits nearly sorted data?' },
  vote: { question: 'Which sorting algorithm suits nearly sorted data?' },
  debate: { question: 'Which sorting algorithm suits nearly sorted data?' },
  jury: {
    question: 'Is this a good answer?',
    modeConfig: { content: 'Insertion sort, in O(n) on sorted data.' },
  },
  delphi: { question: 'How many piano tuners work in Chicago?' },
};

describe('the mode registries', () => {
  it('hold every mode, each under its own name, with the facts its definition carries', () => {
    expect(Object.keys(MODES).sort()).toEqual([...MODE_NAMES].sort());
    expect(Object.keys(MODE_FACTS).sort()).toEqual([...MODE_NAMES].sort());
    for (const mode of MODE_NAMES) {
      expect(MODES[mode].mode).toBe(mode);
      expect(MODE_FACTS[mode].mode).toBe(mode);
      expect(MODES[mode].facts).toBe(MODE_FACTS[mode]);
      expect(modeDefinition(mode)).toBe(MODES[mode]);
      expect(modeFacts(mode)).toBe(MODE_FACTS[mode]);
    }
    expect(modeFacts('constructor')).toBeUndefined();
    expect(modeDefinition('toString' as never)).toBeUndefined();
  });

  it.each(MODE_NAMES)('%s: its facts name its roster as GET /api/modes describes it', (mode) => {
    const facts = MODE_FACTS[mode];
    const [panel, chair] = MODES[mode].describe(TEST_DEFAULTS).roster;
    expect(facts.panelRole).toBe(panel.role);
    expect(panel.field.replace(/^modeConfig\./, '')).toBe(facts.roster.models);
    expect(chair?.field.replace(/^modeConfig\./, '')).toBe(facts.roster.chairman);
    expect(panel.field.startsWith('modeConfig.')).toBe(!facts.topLevelRoster);
  });

  it.each(MODE_NAMES)(
    '%s: its facts say what a whole run shows (stages, their rows, final stage)',
    async (mode) => {
      const facts = MODE_FACTS[mode];
      const { store, writes, stages } = await deliberateInMemory(modeDefinition, mode, REQUESTS[mode]);
      expect(store.state.status).toBe('complete');
      // Every row committed is one the facts list for a stage that ran (Delphi's classify row is
      // written with round_1's), and every stage that ran has rows the facts know of.
      const listed = new Set(stages.flatMap((stage) => facts.stageRows(stage)));
      for (const write of writes) for (const row of write.rows ?? []) expect(listed).toContain(row.stageType);
      for (const stage of stages) expect(facts.stageRows(stage).length).toBeGreaterThan(0);
      expect(facts.stageRows('no such stage')).toEqual([]);
      // The stages in another role than the panel's are stages of the mode.
      for (const stage of Object.keys(facts.stageRoles))
        expect(facts.stageRows(stage).length).toBeGreaterThan(0);
      // A batch report reads the panel's parsed answers from these rows (ModeFacts.parsedAnswer).
      const parsed = store.rows.map((r) =>
        facts.parsedAnswer({ stageType: r.stageType, data: r.parsedData }),
      );
      expect(parsed).toContain(true);
      expect(parsed).not.toContain(false);
      if (facts.finalStage) {
        expect(stages).toContain(facts.finalStage.stage);
        expect(store.events.map((e) => e.type)).toContain(facts.finalStage.startEvent);
      }
    },
  );
});
