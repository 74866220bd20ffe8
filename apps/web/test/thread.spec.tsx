/** @jest-environment jsdom */
import { loadConfig } from '@conclave/config';
import {
  MODE_NAMES,
  type BatchView,
  type DeliberationView,
  type DeliveredEvent,
  type ModeDescription,
  type ModelsResponse,
} from '@conclave/contracts';
import { modeDefinition } from '@conclave/deliberation';
import { act, fireEvent, render, screen } from '@testing-library/react';
import type { Socket } from 'socket.io-client';
import { connection, follow, getDeliberation, type FollowHandlers } from '../src/api';
import { BatchesPage } from '../src/batches';
import type { ConversationDetail, ConversationSummary } from '../src/conversations';
import { ConversationList } from '../src/sidebar';
import ThreadRoute, { Thread } from '../src/thread';
import { jury } from './fixtures';

jest.mock('../src/api', () => ({
  ...jest.requireActual('../src/api'),
  follow: jest.fn(),
  getDeliberation: jest.fn(),
  connection: jest.fn(),
}));
const followMock = follow as jest.MockedFunction<typeof follow>;
const getDeliberationMock = getDeliberation as jest.MockedFunction<typeof getDeliberation>;
const connectionMock = connection as jest.MockedFunction<typeof connection>;

const defaults = loadConfig({ AUTH_MODE: 'none' }).defaults;
const modes: ModeDescription[] = MODE_NAMES.map((mode) => modeDefinition(mode)!.describe(defaults));
const noModels: ModelsResponse = { models: [], sources: [], directives: [], promptKinds: [] };

const view = (messageId: string, extra: Partial<DeliberationView> = {}): DeliberationView => ({
  messageId,
  conversationId: 'c1',
  mode: 'council',
  status: 'complete',
  error: null,
  createdAt: '2025-01-01T00:00:00Z',
  completedAt: '2025-01-01T00:00:05Z',
  simulated: true,
  usage: { promptTokens: 10, completionTokens: 5, costUsd: 0 },
  calls: [],
  result: {},
  partial: null,
  degraded: null,
  ...extra,
});

const councilThread = (lastStatus: DeliberationView['status'] = 'complete'): ConversationDetail => ({
  id: 'c1',
  title: 'Primes',
  mode: 'council',
  createdAt: null,
  updatedAt: null,
  messages: [
    {
      id: 'u1',
      role: 'user',
      turn: 1,
      content: 'Name a prime.',
      status: 'complete',
      error: null,
      createdAt: null,
      completedAt: null,
    },
    {
      id: 'a1',
      role: 'assistant',
      turn: 1,
      content: '',
      status: 'complete',
      error: null,
      createdAt: null,
      completedAt: null,
      config: { councilModels: ['sim/x', 'sim/y'], chairmanModel: 'sim/z' },
      deliberation: view('a1', {
        result: { stage3: { model: 'sim/z', response: 'Seven.', responseTimeMs: 1 } },
      }),
    },
    {
      id: 'u2',
      role: 'user',
      turn: 2,
      content: 'And the next?',
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
      status: lastStatus,
      error: null,
      createdAt: null,
      completedAt: null,
      config: { councilModels: ['sim/x', 'sim/y'], chairmanModel: 'sim/z' },
      deliberation: view('a2', { status: lastStatus }),
    },
  ],
});

let routes: Record<string, () => { status: number; body?: unknown }>;
const requests: string[] = [];

beforeEach(() => {
  requests.length = 0;
  followMock.mockReset();
  followMock.mockImplementation(() => () => undefined);
  getDeliberationMock.mockReset();
  routes = {
    'GET /api/modes': () => ({ status: 200, body: modes }),
    'GET /api/models': () => ({ status: 200, body: noModels }),
  };
  global.fetch = jest.fn(async (url: string, init?: RequestInit) => {
    const key = `${init?.method ?? 'GET'} ${url}`;
    requests.push(key);
    const answer = routes[key]?.() ?? {
      status: 404,
      body: { statusCode: 404, error: 'Not Found', message: 'no' },
    };
    return {
      ok: answer.status < 400,
      status: answer.status,
      text: async () => (answer.body === undefined ? '' : JSON.stringify(answer.body)),
    };
  }) as unknown as typeof fetch;
});

const settle = () => act(async () => new Promise((r) => setTimeout(r, 0)));

describe('a conversation as a thread', () => {
  it("shows each turn's question first, then its result, newest last, then the follow-up input", async () => {
    routes['GET /api/conversations/c1'] = () => ({ status: 200, body: councilThread() });
    const { container } = render(<Thread conversationId="c1" onChanged={jest.fn()} onDeleted={jest.fn()} />);
    await screen.findByText('Name a prime.');
    await settle();
    const turns = [...container.querySelectorAll('.turn')];
    expect(turns.map((t) => t.getAttribute('data-message-id'))).toEqual(['a1', 'a2']);
    expect(turns.map((t) => t.firstElementChild?.textContent)).toEqual(['Name a prime.', 'And the next?']);
    expect(turns[0].textContent?.indexOf('Name a prime.')).toBeLessThan(
      turns[0].textContent?.indexOf('Seven.') ?? 0,
    );
    expect(screen.getByRole('heading', { level: 2 }).textContent).toBe('Primes');
    // the follow-up keeps the conversation's roster, shown
    expect(container.querySelector('.roster-summary')?.textContent).toBe(
      'council: sim/x, sim/y · chairman: sim/z',
    );
    const button = screen.getByRole('button', { name: 'Ask a follow-up' }) as HTMLButtonElement;
    expect(button.disabled).toBe(false);
    expect(container.querySelector('form[aria-label="follow-up"]')?.compareDocumentPosition(turns[1])).toBe(
      Node.DOCUMENT_POSITION_PRECEDING,
    );
  });

  it('shows an earlier turn brought in with the history as its answer, with nothing to follow', async () => {
    const thread = councilThread();
    // Turn 1 as the OpenAI-compatible API stores a chat's earlier exchange: complete, no call.
    thread.messages[1] = {
      ...thread.messages[1],
      content: 'Two, the **only** even prime. <img src=x onerror="alert(1)">',
      deliberation: view('a1', {
        calls: [],
        result: {},
        usage: { promptTokens: 0, completionTokens: 0, costUsd: 0 },
      }),
    };
    routes['GET /api/conversations/c1'] = () => ({ status: 200, body: thread });
    const { container } = render(<Thread conversationId="c1" onChanged={jest.fn()} onDeleted={jest.fn()} />);
    await screen.findByText('Name a prime.');
    await settle();
    const [earlier, later] = [...container.querySelectorAll('.turn')];
    expect(earlier.getAttribute('data-status')).toBe('imported');
    const answer = screen.getByRole('region', { name: 'answer to turn 1' });
    expect(answer.textContent).toContain('Two, the only even prime.');
    expect(answer.querySelector('strong')?.textContent).toBe('only');
    // Markdown, not HTML: nothing the answer carried runs.
    expect(answer.querySelector('img')).toBeNull();
    expect(earlier.textContent).toContain('not deliberated here');
    expect(earlier.querySelector('[data-testid="status"]')).toBeNull();
    // Only the deliberated turn is followed.
    expect(followMock.mock.calls.map(([id]) => id)).toEqual(['a2']);
    expect(later.getAttribute('data-status')).toBe('complete');
  });

  it('holds the follow-up back while the last turn runs, and reads the thread again when it ends', async () => {
    routes['GET /api/conversations/c1'] = () => ({ status: 200, body: councilThread('running') });
    const handlers = new Map<string, FollowHandlers>();
    followMock.mockImplementation((id, h) => (handlers.set(id, h), () => undefined));
    getDeliberationMock.mockResolvedValue(view('a2', { status: 'running' }));
    const onChanged = jest.fn();
    render(<Thread conversationId="c1" onChanged={onChanged} onDeleted={jest.fn()} />);
    await screen.findByText('You can ask a follow-up once this turn has finished.');
    expect((screen.getByRole('button', { name: 'Ask a follow-up' }) as HTMLButtonElement).disabled).toBe(
      true,
    );
    const event = (type: string, seq: number, extra: object = {}) =>
      ({ type, messageId: 'a2', seq, at: '2025-01-01T00:00:06Z', ...extra }) as DeliveredEvent;
    // the finished turn only replays: nothing to refresh for it
    act(() => handlers.get('a1')?.onEvent(event('complete', 9)));
    expect(onChanged).not.toHaveBeenCalled();
    routes['GET /api/conversations/c1'] = () => ({ status: 200, body: councilThread('complete') });
    await act(async () => {
      handlers.get('a2')?.onEvent(event('title_complete', 5, { data: { title: 'Primes' } }));
      handlers.get('a2')?.onEvent(event('complete', 6));
    });
    await settle();
    expect(onChanged).toHaveBeenCalled();
    expect((screen.getByRole('button', { name: 'Ask a follow-up' }) as HTMLButtonElement).disabled).toBe(
      false,
    );
  });

  it("shows jury's content under evaluation and its question first, and once", async () => {
    routes['GET /api/conversations/c2'] = () => ({
      status: 200,
      body: {
        id: 'c2',
        title: null,
        mode: 'jury',
        createdAt: null,
        updatedAt: null,
        messages: [
          {
            id: 'u',
            role: 'user',
            turn: 1,
            content: 'The earth is **round**.',
            status: 'complete',
            error: null,
            createdAt: null,
            completedAt: null,
          },
          {
            id: 'a',
            role: 'assistant',
            turn: 1,
            content: '',
            status: 'complete',
            error: null,
            createdAt: null,
            completedAt: null,
            config: { content: 'The earth is **round**.', originalQuestion: 'What shape is the earth?' },
            deliberation: view('a', { mode: 'jury', conversationId: 'c2', result: jury }),
          },
        ],
      } satisfies ConversationDetail,
    });
    const { container } = render(<Thread conversationId="c2" onChanged={jest.fn()} onDeleted={jest.fn()} />);
    await screen.findByText('Question: What shape is the earth?');
    const first = container.querySelector('.turn')?.firstElementChild;
    expect(first?.classList.contains('content-card')).toBe(true);
    expect(first?.querySelector('strong')?.textContent).toBe('round');
    expect(container.querySelectorAll('.content-card')).toHaveLength(1);
    expect(screen.getByText(/A jury deliberation has one turn/)).toBeTruthy();
  });

  it('asks before deleting; Cancel keeps it, Delete deletes it', async () => {
    routes['GET /api/conversations/c1'] = () => ({ status: 200, body: councilThread() });
    routes['DELETE /api/conversations/c1'] = () => ({ status: 204 });
    const onDeleted = jest.fn();
    render(<Thread conversationId="c1" onChanged={jest.fn()} onDeleted={onDeleted} />);
    fireEvent.click(await screen.findByRole('button', { name: 'Delete conversation' }));
    const dialog = screen.getByRole('alertdialog');
    expect(dialog.textContent).toContain('Delete this conversation and its 2 turns? This cannot be undone.');
    expect(document.activeElement?.textContent).toBe('Cancel');
    fireEvent.keyDown(dialog, { key: 'Escape' });
    expect(screen.queryByRole('alertdialog')).toBeNull();
    expect(document.activeElement?.textContent).toBe('Delete conversation');
    fireEvent.click(screen.getByRole('button', { name: 'Delete conversation' }));
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    expect(requests).not.toContain('DELETE /api/conversations/c1');
    fireEvent.click(screen.getByRole('button', { name: 'Delete conversation' }));
    await act(async () => {
      fireEvent.click(screen.getByRole('button', { name: 'Delete' }));
    });
    expect(requests).toContain('DELETE /api/conversations/c1');
    expect(onDeleted).toHaveBeenCalledTimes(1);
  });

  it('shows a not-found view for an unknown conversation or deliberation, without throwing', async () => {
    const { unmount } = render(<Thread conversationId="gone" onChanged={jest.fn()} onDeleted={jest.fn()} />);
    expect((await screen.findByTestId('not-found')).textContent).toContain(
      'This conversation does not exist',
    );
    unmount();
    const { ApiFailure } = jest.requireActual<typeof import('../src/api')>('../src/api');
    getDeliberationMock.mockRejectedValue(
      new ApiFailure(404, { statusCode: 404, error: 'Not Found', message: 'no' }),
    );
    const onActive = jest.fn();
    render(
      <ThreadRoute route="m" id="m-gone" onActive={onActive} onChanged={jest.fn()} onDeleted={jest.fn()} />,
    );
    expect((await screen.findByTestId('not-found')).textContent).toContain(
      'This deliberation does not exist',
    );
    expect(onActive).toHaveBeenLastCalledWith(null);
  });

  it("opens a deliberation's link in its conversation's thread, and names that conversation", async () => {
    routes['GET /api/conversations/c1'] = () => ({ status: 200, body: councilThread() });
    getDeliberationMock.mockResolvedValue(view('a2'));
    const onActive = jest.fn();
    render(<ThreadRoute route="m" id="a2" onActive={onActive} onChanged={jest.fn()} onDeleted={jest.fn()} />);
    await screen.findByText('And the next?');
    expect(onActive).toHaveBeenLastCalledWith('c1');
    expect(screen.getByText('Name a prime.')).toBeTruthy();
  });
});

describe('the sidebar', () => {
  const item = (id: string, extra: Partial<ConversationSummary> = {}): ConversationSummary => ({
    id,
    title: null,
    mode: 'council',
    createdAt: '',
    updatedAt: '',
    turns: 1,
    lastStatus: 'complete',
    question: `Question ${id}?`,
    ...extra,
  });

  it('marks the active conversation, shows each status, and folds a batch into one group', () => {
    const { container } = render(
      <ConversationList
        conversations={[
          item('a', { title: 'Sorting', lastStatus: 'running' }),
          item('b1', { batchId: 'B', batchName: 'nightly', mode: 'jury' }),
          item('b2', { batchId: 'B', batchName: 'nightly', mode: 'jury', lastStatus: 'failed' }),
          item('c', { lastStatus: 'cancelled' }),
        ]}
        activeConversation="b2"
        activeBatch={null}
      />,
    );
    const top = [...container.querySelectorAll('.conversation-list > li')];
    expect(top.map((li) => li.className)).toEqual(['entry', 'batch-group', 'entry']);
    expect(top[0].textContent).toBe('Sortingcouncil running');
    expect(top[2].querySelector('.status-cancelled')).toBeTruthy();
    const group = top[1];
    expect(group.querySelector('summary')?.textContent).toBe('nightly1/2 failed');
    expect(group.querySelector('details')?.open).toBe(true); // it holds the active conversation
    expect(group.querySelector('a.batch-page-link')?.getAttribute('href')).toBe('#/batches/B');
    expect(container.querySelectorAll('[aria-current="page"]')).toHaveLength(1);
    expect(container.querySelector('[aria-current="page"]')?.getAttribute('href')).toBe('#/c/b2');
    expect(container.querySelector('[aria-current="page"]')?.textContent).toContain('Question b2?');
  });
});

describe('the batches page', () => {
  it('moves each running batch on as its snapshots arrive, and stops following it once it ended', async () => {
    const listeners = new Map<string, (payload: unknown) => void>();
    const emitted: [string, unknown][] = [];
    const socket = {
      connected: true,
      on: (name: string, fn: (payload: unknown) => void) => listeners.set(name, fn),
      off: (name: string) => listeners.delete(name),
      emitWithAck: async (name: string, body: unknown) => (emitted.push([name, body]), { ok: true }),
    };
    connectionMock.mockReturnValue(socket as unknown as Socket);
    const batch = (id: string, extra: Partial<BatchView> = {}): BatchView => ({
      batchId: id,
      name: id,
      status: 'running',
      total: 6,
      queued: 6,
      running: 0,
      complete: 0,
      failed: 0,
      cancelled: 0,
      concurrency: 2,
      createdAt: '',
      startedAt: null,
      finishedAt: null,
      usage: { promptTokens: 0, completionTokens: 0, costUsd: 0 },
      etaSeconds: null,
      maxCostUsd: null,
      retriedItems: 0,
      ...extra,
    });
    routes['GET /api/batches'] = () => ({
      status: 200,
      body: [batch('b-run'), batch('b-done', { status: 'complete', complete: 6, finishedAt: 'x' })],
    });
    const { container } = render(<BatchesPage batchId={null} items={[]} />);
    await screen.findByText('b-run');
    await settle();
    expect(emitted).toEqual([['subscribe', { batchId: 'b-run' }]]);
    act(() =>
      listeners.get('batch_progress')?.({
        type: 'batch_progress',
        ...batch('b-run', { complete: 3, queued: 3 }),
      }),
    );
    const row = () => container.querySelector('li[data-batch-id="b-run"]');
    expect(row()?.textContent).toContain('3/6');
    act(() =>
      listeners.get('batch_complete')?.({
        type: 'batch_complete',
        ...batch('b-run', { status: 'complete', complete: 6, queued: 0, finishedAt: 'y' }),
      }),
    );
    expect(row()?.getAttribute('data-status')).toBe('complete');
    expect(row()?.textContent).toContain('6/6');
    expect(emitted).toContainEqual(['unsubscribe', { batchId: 'b-run' }]);
  });

  it('shows a batch that ran out of budget, and its retried items', async () => {
    connectionMock.mockReturnValue({
      connected: true,
      on: () => undefined,
      off: () => undefined,
      emitWithAck: async () => ({ ok: true }),
    } as unknown as Socket);
    const view: BatchView = {
      batchId: 'b-budget',
      name: 'budgeted',
      status: 'budget_exhausted',
      total: 6,
      queued: 0,
      running: 0,
      complete: 2,
      failed: 0,
      cancelled: 4,
      concurrency: 2,
      createdAt: '',
      startedAt: null,
      finishedAt: 'x',
      usage: { promptTokens: 0, completionTokens: 0, costUsd: 0.5 },
      etaSeconds: 0,
      maxCostUsd: 0.5,
      retriedItems: 1,
    };
    routes['GET /api/batches'] = () => ({ status: 200, body: [view] });
    routes['GET /api/batches/b-budget'] = () => ({ status: 200, body: view });
    const { container } = render(<BatchesPage batchId="b-budget" items={[]} />);
    await screen.findByText(/Budget \$0\.5 reached/);
    const card = container.querySelector('.batch-progress');
    expect(card?.getAttribute('data-status')).toBe('budget_exhausted');
    expect(card?.querySelector('.status-budget_exhausted')?.textContent).toBe('budget_exhausted');
    expect(card?.textContent).toContain('1 item(s) retried');
    expect(card?.querySelector('button.danger')).toBeNull();
  });
});
