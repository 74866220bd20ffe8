/** @jest-environment jsdom */
import type { Socket } from 'socket.io-client';

/** What the fake socket acks to each `emitWithAck`, in turn; the rest of its calls. */
const acks: unknown[] = [];
const emitted: [string, unknown][] = [];
const fakeSocket = {
  connected: true,
  on: () => undefined,
  off: () => undefined,
  onAny: () => undefined,
  offAny: () => undefined,
  emitWithAck: async (name: string, body: unknown) => {
    emitted.push([name, body]);
    return acks.shift() ?? { ok: true };
  },
};
jest.mock('socket.io-client', () => ({ io: () => fakeSocket as unknown as Socket }));

import { ApiFailure, follow, newIdempotencyKey, retryDelayOf, startDeliberation } from '../src/api';

const storageAway = {
  error: {
    statusCode: 503,
    message: 'Storage is unavailable right now; try again in 5 seconds',
    retryAfterSeconds: 5,
  },
};

beforeEach(() => {
  acks.length = 0;
  emitted.length = 0;
});

describe('a socket refusal that says the server is briefly away', () => {
  it('keeps its status and retry hint, so the client retries instead of showing a failure', async () => {
    acks.push(storageAway);
    const failure = await startDeliberation({ question: 'Q?' }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApiFailure);
    expect(failure).toMatchObject({ status: 503, retryAfterSeconds: 5, message: storageAway.error.message });
    expect(retryDelayOf(failure)).toBe(5);
    // A refusal waiting cannot help is shown as it is.
    acks.push({ error: { statusCode: 400, message: 'Invalid request', fields: { question: 'required' } } });
    const invalid = await startDeliberation({}).catch((error: unknown) => error);
    expect(invalid).toMatchObject({ status: 400, body: { fields: { question: 'required' } } });
    expect(retryDelayOf(invalid)).toBeNull();
  });

  it('asks for a refused subscription again once its retry hint has passed, and says so meanwhile', async () => {
    jest.useFakeTimers();
    try {
      acks.push(storageAway);
      const unavailable: (number | null)[] = [];
      const stop = follow('m1', {
        onEvent: () => undefined,
        onLive: () => undefined,
        onUnavailable: (seconds) => unavailable.push(seconds),
      });
      await jest.advanceTimersByTimeAsync(0);
      expect(unavailable).toEqual([5]);
      expect(emitted.filter(([name]) => name === 'subscribe')).toHaveLength(1);
      await jest.advanceTimersByTimeAsync(4900);
      expect(emitted.filter(([name]) => name === 'subscribe')).toHaveLength(1);
      await jest.advanceTimersByTimeAsync(200);
      expect(emitted.filter(([name]) => name === 'subscribe')).toEqual([
        ['subscribe', { messageId: 'm1', afterSeq: 0, deltas: true }],
        ['subscribe', { messageId: 'm1', afterSeq: 0, deltas: true }],
      ]);
      expect(unavailable).toEqual([5, null]);
      stop();
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('a start sent with an idempotency key', () => {
  it('carries it in the deliberate payload, beside the request', async () => {
    const key = newIdempotencyKey();
    expect(key).toMatch(/^web-[0-9a-f]{32}$/);
    expect(newIdempotencyKey()).not.toBe(key);
    acks.push({ conversationId: 'c1', messageId: 'm1' });
    await startDeliberation({ question: 'Q?' }, key);
    expect(emitted).toEqual([['deliberate', { question: 'Q?', idempotencyKey: key }]]);
  });
});
