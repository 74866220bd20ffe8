/** @jest-environment jsdom */
import type { DeliberationView, DeliveredEvent, LiveEvent } from '@conclave/contracts';
import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { Elapsed, formatElapsed, RunBar, Timeline } from '../src/live';
import { applyEvent, applyLive, emptyTimeline, type TimelineState } from '../src/timeline';

let seq = 0;
const progress = (participant: string | number, state: string, extra: object = {}, stage = 'stage1') =>
  ({
    type: 'model_progress',
    messageId: 'm',
    seq: ++seq,
    at: new Date().toISOString(),
    stage,
    participant,
    state,
    ...extra,
  }) as DeliveredEvent;
const delta = (participant: string | number, text: string, stage = 'stage1'): LiveEvent => ({
  type: 'model_delta',
  messageId: 'm',
  stage,
  participant,
  model: null,
  text,
  offset: 0,
});
const fold = (items: (DeliveredEvent | LiveEvent)[]) =>
  items.reduce<TimelineState>(
    (state, item) => ('seq' in item ? applyEvent(state, item) : applyLive(state, item)),
    emptyTimeline(),
  );
const callOf = (container: HTMLElement, id: string) =>
  container.querySelector(`.call[data-participant="${id}"]`) as HTMLElement;

describe('the calls of a running deliberation', () => {
  it('shows each answer as it is written, safely rendered, with a clock per running call', () => {
    const timeline = fold([
      progress('sim/a', 'started'),
      delta('sim/a', '**Bold** start <img src=x onerror="alert(1)"><script>alert(2)</script>'),
      progress('sim/b', 'succeeded', { responseTimeMs: 640, content: 'Bravo.', truncated: true }),
      progress(2, 'started', {}, 'round_1'),
    ]);
    const { container } = render(<Timeline timeline={timeline} showAnswers />);
    const a = callOf(container, 'sim/a');
    expect(a.querySelector('.call-answer')?.getAttribute('data-final')).toBe('no');
    expect(a.querySelector('.call-answer strong')?.textContent).toBe('Bold');
    expect(a.querySelector('script, img')).toBeNull();
    expect(a.querySelector('.elapsed')?.getAttribute('data-running')).toBe('yes');
    const b = callOf(container, 'sim/b');
    expect(b.querySelector('.call-answer')?.getAttribute('data-final')).toBe('yes');
    expect(b.textContent).toContain('640 ms');
    expect(b.querySelector('.truncated')?.textContent).toBe('truncated');
    expect(b.textContent).toContain('Cut short: the model reached its length limit.');
    expect(callOf(container, '2').textContent).toMatch(/^Panelist 2: answering/);
  });

  it('keeps the answers that arrived when the run is cancelled, the partial ones marked', () => {
    const timeline = fold([
      progress('sim/a', 'started'),
      delta('sim/a', 'Half an answer'),
      progress('sim/b', 'succeeded', { responseTimeMs: 10, content: 'Whole answer.' }),
      {
        type: 'cancelled',
        messageId: 'm',
        seq: ++seq,
        at: new Date().toISOString(),
        reason: 'Cancelled by the user.',
      },
    ]);
    const { container } = render(<Timeline timeline={timeline} showAnswers />);
    const a = callOf(container, 'sim/a');
    expect(a.className).toContain('call-stopped');
    expect(a.textContent).toContain('Half an answer');
    expect(a.textContent).toContain('Incomplete: the deliberation was stopped');
    expect(a.querySelector('.elapsed')?.getAttribute('data-running')).toBe('no');
    expect(callOf(container, 'sim/b').textContent).toContain('Whole answer.');
    expect(callOf(container, 'sim/b').textContent).not.toContain('Incomplete');
  });

  it('leaves the answers to the result once it is complete', () => {
    const timeline = fold([progress('sim/a', 'succeeded', { responseTimeMs: 10, content: 'Whole answer.' })]);
    const { container } = render(<Timeline timeline={timeline} showAnswers={false} />);
    expect(container.querySelector('.call-answer')).toBeNull();
    expect(callOf(container, 'sim/a').textContent).toBe('sim/a: done · 10 ms');
  });
});

describe('elapsed time', () => {
  it('reads in tenths of seconds, then minutes', () => {
    expect(formatElapsed(0)).toBe('0.0 s');
    expect(formatElapsed(3456)).toBe('3.5 s');
    expect(formatElapsed(125_000)).toBe('2:05');
    expect(formatElapsed(-40)).toBe('0.0 s');
  });

  it('counts on until it has an end', () => {
    jest.useFakeTimers();
    try {
      const from = new Date(Date.now() - 1000).toISOString();
      render(<Elapsed from={from} />);
      expect(screen.getByText(/^1\.\d s$/)).toBeTruthy();
      act(() => jest.advanceTimersByTime(2000));
      expect(screen.getByText(/^3\.\d s$/)).toBeTruthy();
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('the Stop button', () => {
  const view = {
    messageId: 'm1',
    createdAt: new Date().toISOString(),
    completedAt: null,
    status: 'running',
  } as DeliberationView;
  const answer = (status: number, body: unknown) => {
    let respond!: () => void;
    const sent = new Promise<void>((resolve) => (respond = resolve));
    const fetchMock = jest.fn(async () => {
      await sent;
      return { ok: status < 400, status, text: async () => JSON.stringify(body) };
    });
    global.fetch = fetchMock as unknown as typeof fetch;
    return { fetchMock, respond };
  };

  it('asks the server to cancel, disables itself meanwhile, and shows the outcome', async () => {
    const stopped = { ...view, status: 'cancelled', error: 'Cancelled by the user.' };
    const { fetchMock, respond } = answer(200, stopped);
    const onStopped = jest.fn();
    const { rerender } = render(<RunBar view={view} active endedAt={null} onStopped={onStopped} />);
    fireEvent.click(screen.getByRole('button', { name: 'Stop' }));
    expect(fetchMock).toHaveBeenCalledWith(
      '/api/deliberations/m1/cancel',
      expect.objectContaining({ method: 'POST' }),
    );
    expect((screen.getByRole('button', { name: 'Stopping…' }) as HTMLButtonElement).disabled).toBe(true);
    await act(async () => respond());
    expect(onStopped).toHaveBeenCalledWith(stopped);
    expect(screen.getByRole('status').textContent).toBe('Stopped: Cancelled by the user.');
    rerender(
      <RunBar view={stopped as DeliberationView} active={false} endedAt={null} onStopped={onStopped} />,
    );
    expect((screen.getByRole('button', { name: 'Stopped' }) as HTMLButtonElement).disabled).toBe(true);
  });

  it('says why when the run had already ended', async () => {
    const message = 'This deliberation has already ended (status: complete); there is nothing to cancel.';
    const { respond } = answer(409, { statusCode: 409, error: 'Conflict', message });
    render(<RunBar view={view} active endedAt={null} onStopped={jest.fn()} />);
    fireEvent.click(screen.getByRole('button', { name: 'Stop' }));
    await act(async () => respond());
    expect(screen.getByRole('status').textContent).toBe(message);
  });

  it('while the server is briefly away (503), says it is retrying and asks again until the stop goes through', async () => {
    const stopped = { ...view, status: 'cancelled', error: 'Cancelled by the user.' };
    const answers = [
      {
        status: 503,
        retryAfter: '1',
        body: {
          statusCode: 503,
          error: 'Service Unavailable',
          message: 'Storage is unavailable right now; try again in 5 seconds',
        },
      },
      { status: 200, retryAfter: null, body: stopped },
    ];
    const fetchMock = jest.fn(async () => {
      const answer = answers.shift()!;
      return {
        ok: answer.status < 400,
        status: answer.status,
        headers: { get: (name: string) => (name.toLowerCase() === 'retry-after' ? answer.retryAfter : null) },
        text: async () => JSON.stringify(answer.body),
      };
    });
    global.fetch = fetchMock as unknown as typeof fetch;
    const onStopped = jest.fn();
    render(<RunBar view={view} active endedAt={null} onStopped={onStopped} />);
    fireEvent.click(screen.getByRole('button', { name: 'Stop' }));
    expect((await screen.findByRole('status')).textContent).toBe(
      'The server is temporarily unavailable; retrying in 1 s…',
    );
    expect((screen.getByRole('button', { name: 'Stopping…' }) as HTMLButtonElement).disabled).toBe(true);
    await waitFor(() => expect(onStopped).toHaveBeenCalledWith(stopped), { timeout: 5000 });
    expect(fetchMock).toHaveBeenCalledTimes(2);
    expect(screen.getByRole('status').textContent).toBe('Stopped: Cancelled by the user.');
  });

  it('is not there once the run has ended', () => {
    render(
      <RunBar
        view={{ ...view, status: 'complete' }}
        active={false}
        endedAt={view.createdAt}
        onStopped={jest.fn()}
      />,
    );
    expect(screen.queryByRole('button')).toBeNull();
    expect(screen.getByText('0.0 s')).toBeTruthy();
  });
});
