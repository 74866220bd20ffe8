/** @jest-environment jsdom */
import { loadConfig } from '@conclave/config';
import type { DeliberationView, ModeDescription } from '@conclave/contracts';
import { modeDefinition } from '@conclave/deliberation';
import {
  claimFocus,
  conversationOfStarted,
  displayTitle,
  groupConversations,
  noteStarted,
  optionsFromConfig,
  rosterFromConfig,
  turnsOf,
  type ConversationSummary,
} from '../src/conversations';
import { handleTabListKey, movedIndex } from '../src/keys';

const defaults = loadConfig({ AUTH_MODE: 'none' }).defaults;
const describeMode = (mode: 'council' | 'vote' | 'jury'): ModeDescription =>
  modeDefinition(mode)!.describe(defaults);

const summary = (id: string, extra: Partial<ConversationSummary> = {}): ConversationSummary => ({
  id,
  title: null,
  mode: 'council',
  createdAt: '2025-01-01T00:00:00Z',
  updatedAt: '2025-01-01T00:00:00Z',
  turns: 1,
  lastStatus: 'complete',
  batchId: null,
  batchName: null,
  question: null,
  ...extra,
});

describe('a conversation as turns', () => {
  it('pairs each question with its deliberation, in turn order', () => {
    const view = { messageId: 'a2', status: 'running' } as DeliberationView;
    const turns = turnsOf({
      id: 'c',
      title: null,
      mode: 'council',
      createdAt: null,
      updatedAt: null,
      messages: [
        {
          id: 'u2',
          role: 'user',
          turn: 2,
          content: 'Second?',
          status: 'complete',
          error: null,
          createdAt: null,
          completedAt: null,
        },
        {
          id: 'a2',
          role: 'assistant',
          turn: 2,
          content: '',
          status: 'queued',
          error: null,
          createdAt: null,
          completedAt: null,
          config: { councilModels: ['sim/x'] },
          deliberation: view,
        },
        {
          id: 'u1',
          role: 'user',
          turn: 1,
          content: 'First?',
          status: 'complete',
          error: null,
          createdAt: null,
          completedAt: null,
        },
        {
          id: 'a1',
          role: 'assistant',
          turn: 1,
          content: 'x',
          status: 'complete',
          error: null,
          createdAt: null,
          completedAt: null,
          config: 'not an object',
        },
      ],
    });
    expect(turns).toEqual([
      {
        turn: 1,
        question: 'First?',
        messageId: 'a1',
        status: 'complete',
        config: null,
        view: null,
        answer: 'x',
      },
      // the deliberation's own status is the newer one
      {
        turn: 2,
        question: 'Second?',
        messageId: 'a2',
        status: 'running',
        config: { councilModels: ['sim/x'] },
        view,
        answer: '',
      },
    ]);
  });

  it('calls a conversation by its title, else by the first line of its question', () => {
    expect(displayTitle({ title: 'Sorting', question: 'Which sort?' })).toBe('Sorting');
    expect(displayTitle({ title: null, question: '\n  Which sort?\nMore' })).toBe('Which sort?');
    expect(displayTitle({ title: '  ', question: null })).toBe('Untitled');
    expect(displayTitle({ title: null, question: 'x'.repeat(100) })).toBe(`${'x'.repeat(59)}…`);
  });
});

describe('the sidebar list', () => {
  it("gathers a batch's items into one group at the place of its newest item, with a status", () => {
    const entries = groupConversations([
      summary('a'),
      summary('b1', { batchId: 'B', batchName: 'nightly', lastStatus: 'complete' }),
      summary('c', { lastStatus: 'failed' }),
      summary('b2', { batchId: 'B', batchName: 'nightly', lastStatus: 'running' }),
      summary('d1', { batchId: 'D', lastStatus: 'failed' }),
      summary('d2', { batchId: 'D', lastStatus: 'complete' }),
    ]);
    expect(
      entries.map((e) =>
        e.kind === 'batch' ? [e.batchId, e.name, e.status, e.items.map((i) => i.id)] : e.conversation.id,
      ),
    ).toEqual(['a', ['B', 'nightly', 'running', ['b1', 'b2']], 'c', ['D', null, 'failed', ['d1', 'd2']]]);
  });
});

describe("a follow-up's starting point", () => {
  it("fills each role from the previous turn's config", () => {
    const council = describeMode('council');
    expect(rosterFromConfig(council, { councilModels: ['sim/x', 'sim/y'], chairmanModel: 'sim/z' })).toEqual({
      councilModels: 'sim/x, sim/y',
      chairmanModel: 'sim/z',
    });
    expect(
      rosterFromConfig(describeMode('jury'), {
        jurorModels: ['sim/a', 'sim/b', 'sim/c'],
        foremanModel: 'sim/f',
      }),
    ).toEqual({ 'modeConfig.jurorModels': 'sim/a, sim/b, sim/c', 'modeConfig.foremanModel': 'sim/f' });
    expect(rosterFromConfig(council, null)).toEqual({});
    expect(rosterFromConfig(council, { councilModels: [1, 2] })).toEqual({});
  });

  it('keeps the options that differ from their default', () => {
    const council = describeMode('council');
    const timeout = council.options.find((o) => o.field === 'timeoutMs');
    expect(timeout).toBeDefined();
    expect(optionsFromConfig(council, { timeoutMs: timeout?.default })).toEqual({});
    expect(optionsFromConfig(council, { timeoutMs: 61_000, councilModels: ['sim/a'] })).toEqual({
      timeoutMs: '61000',
    });
  });

  it('remembers the conversation of a message started here, and gives the focus to it once', () => {
    noteStarted({ conversationId: 'c9', messageId: 'm9' });
    expect(conversationOfStarted('m9')).toBe('c9');
    expect(claimFocus('other')).toBe(false);
    expect(claimFocus('m9')).toBe(true);
    expect(claimFocus('m9')).toBe(false);
  });
});

describe('keys', () => {
  it('moves among items with arrows (wrapping), Home and End', () => {
    expect(movedIndex('ArrowRight', 2, 3)).toBe(0);
    expect(movedIndex('ArrowDown', 0, 3)).toBe(1);
    expect(movedIndex('ArrowLeft', 0, 3)).toBe(2);
    expect(movedIndex('ArrowUp', 2, 3)).toBe(1);
    expect(movedIndex('Home', 2, 3)).toBe(0);
    expect(movedIndex('End', 0, 3)).toBe(2);
    expect(movedIndex('a', 0, 3)).toBeNull();
    expect(movedIndex('End', 0, 0)).toBeNull();
  });

  it('moves the focus and the selection in any tab list that does not handle its keys itself', () => {
    document.body.innerHTML = `
      <div role="tablist">
        <button role="tab" aria-selected="true">One</button>
        <button role="tab" aria-selected="false">Two</button>
        <button role="tab" aria-selected="false">Three</button>
      </div>`;
    const tabs = [...document.querySelectorAll<HTMLButtonElement>('[role="tab"]')];
    const clicked: string[] = [];
    for (const tab of tabs) tab.addEventListener('click', () => clicked.push(tab.textContent ?? ''));
    document.addEventListener('keydown', handleTabListKey);
    tabs[0].focus();
    tabs[0].dispatchEvent(
      new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true, cancelable: true }),
    );
    expect(document.activeElement).toBe(tabs[1]);
    tabs[1].dispatchEvent(new KeyboardEvent('keydown', { key: 'End', bubbles: true, cancelable: true }));
    expect(document.activeElement).toBe(tabs[2]);
    expect(clicked).toEqual(['Two', 'Three']);
    // a list that handled the key (preventDefault) is left alone
    tabs[2].addEventListener('keydown', (e) => e.preventDefault(), { once: true });
    tabs[2].dispatchEvent(new KeyboardEvent('keydown', { key: 'Home', bubbles: true, cancelable: true }));
    expect(document.activeElement).toBe(tabs[2]);
    document.removeEventListener('keydown', handleTabListKey);
  });
});
