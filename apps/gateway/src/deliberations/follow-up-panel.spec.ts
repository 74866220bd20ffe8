import {
  withConversationPanel as layered,
  withoutConfigFields,
  type ConversationPanel,
} from './follow-up-panel';

const withConversationPanel = (...args: Parameters<typeof layered>) => layered(...args).request;

const COUNCIL_FIELDS = new Set(['councilModels', 'chairmanModel', 'timeoutMs']);
const panel: ConversationPanel = {
  mode: 'council',
  config: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c', timeoutMs: 5000 },
};

describe('withConversationPanel', () => {
  it("gives a turn that names only the conversation the conversation's mode, roster and options", () => {
    expect(withConversationPanel(panel, { question: 'q', conversationId: 'id' }, COUNCIL_FIELDS)).toEqual({
      question: 'q',
      conversationId: 'id',
      mode: 'council',
      modeConfig: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c', timeoutMs: 5000 },
    });
  });

  it('lets a top-level roster field replace the stored one and keeps the rest', () => {
    const merged = withConversationPanel(
      panel,
      { question: 'q', conversationId: 'id', councilModels: ['sim/x', 'sim/y'] },
      COUNCIL_FIELDS,
    );
    expect(merged).toEqual({
      question: 'q',
      conversationId: 'id',
      mode: 'council',
      councilModels: ['sim/x', 'sim/y'],
      modeConfig: { chairmanModel: 'sim/c', timeoutMs: 5000 },
    });
  });

  it('merges modeConfig key by key, the turn winning', () => {
    const merged = withConversationPanel(
      panel,
      { question: 'q', mode: 'council', modeConfig: { timeoutMs: 9000, chairmanModel: 'sim/z' } },
      COUNCIL_FIELDS,
    );
    expect(merged.modeConfig).toEqual({
      councilModels: ['sim/a', 'sim/b'],
      chairmanModel: 'sim/z',
      timeoutMs: 9000,
    });
  });

  it('leaves a turn naming another mode as it is, for the admission to refuse', () => {
    const request = { question: 'q', conversationId: 'id', mode: 'vote' };
    expect(withConversationPanel(panel, request, COUNCIL_FIELDS)).toBe(request);
  });

  it('carries only fields the mode takes, and nothing from a turn without a config', () => {
    const stored: ConversationPanel = { mode: 'council', config: { councilModels: ['sim/a'], internal: 1 } };
    expect(withConversationPanel(stored, { question: 'q' }, COUNCIL_FIELDS).modeConfig).toEqual({
      councilModels: ['sim/a'],
    });
    expect(
      withConversationPanel({ mode: 'council', config: null }, { question: 'q' }, COUNCIL_FIELDS),
    ).toEqual({
      question: 'q',
      mode: 'council',
    });
  });

  it('leaves a modeConfig of the wrong type for the validator to name', () => {
    expect(withConversationPanel(panel, { question: 'q', modeConfig: 'x' }, COUNCIL_FIELDS).modeConfig).toBe(
      'x',
    );
  });

  it('says which config fields came from the conversation, and can leave them behind', () => {
    const followUp = layered(
      panel,
      { question: 'q', councilModels: ['sim/x', 'sim/y'], modeConfig: { timeoutMs: 1000 } },
      COUNCIL_FIELDS,
    );
    expect(followUp.inherited).toEqual(['modeConfig.chairmanModel']);
    expect(withoutConfigFields(followUp.request, followUp.inherited).modeConfig).toEqual({ timeoutMs: 1000 });
  });
});
