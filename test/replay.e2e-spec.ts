import type { DeliveredEvent } from '@conclave/contracts';
import { expectContiguous, TestStack } from './support/harness';

async function readSse(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
  const text = await response.text(); // the server closes the stream after complete or error
  return text
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => {
      const field = (name: string) => block.match(new RegExp(`^${name}: (.*)$`, 'm'))?.[1];
      return {
        event: field('event'),
        id: Number(field('id')),
        data: JSON.parse(field('data') ?? '{}') as DeliveredEvent,
      };
    });
}

describe('event replay: late subscribers and reconnects miss nothing and see nothing twice', () => {
  const stack = new TestStack({ SIM_LATENCY_MS: '60' });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  it('a subscriber joining mid-run gets the missed events in order, then live ones', async () => {
    const { messageId } = await stack.deliberate({
      question: 'Late joiner',
      councilModels: ['sim/a', 'sim/b', 'sim/c'],
    });
    const early = await stack.follow(messageId);
    // a second client that saw the first few events only, then reconnects
    const cut = 5;
    const late = await stack.follow(messageId, { afterSeq: cut });
    expectContiguous(early);
    expect(late.map((e) => e.seq)).toEqual(early.slice(cut).map((e) => e.seq));
    expect(late).toEqual(early.slice(cut));
  });

  it('subscribing while events are being produced gives no gap and no duplicate', async () => {
    const { messageId } = await stack.deliberate({
      question: 'Race',
      councilModels: ['sim/a', 'sim/b', 'sim/c'],
    });
    await new Promise((r) => setTimeout(r, 90));
    const events = await stack.follow(messageId);
    expectContiguous(events);
    expect(events.at(-1)?.type).toBe('complete');
  });

  it('a client that unsubscribes and resubscribes with afterSeq continues where it stopped', async () => {
    const { messageId } = await stack.deliberate({ question: 'Resume', councilModels: ['sim/a', 'sim/b'] });
    const socket = await stack.connect();
    const seen: DeliveredEvent[] = [];
    await new Promise<void>((resolve) => {
      socket.onAny((_name: string, event: DeliveredEvent) => {
        seen.push(event);
        if (seen.length === 3) resolve();
      });
      void socket.emitWithAck('subscribe', { messageId });
    });
    await socket.emitWithAck('unsubscribe', { messageId });
    socket.offAny();
    const lastSeen = seen.at(-1)?.seq ?? 0;
    const rest = await stack.follow(messageId, { socket, afterSeq: lastSeen });
    expectContiguous([...seen.slice(0, lastSeen), ...rest]);
  });

  it('rejects a malformed subscribe', async () => {
    const socket = await stack.connect();
    expect(await socket.emitWithAck('subscribe', {})).toMatchObject({
      error: { fields: { messageId: expect.any(String) } },
    });
    expect(await socket.emitWithAck('subscribe', { messageId: 'x', afterSeq: -1 })).toMatchObject({
      error: { fields: { afterSeq: expect.any(String) } },
    });
  });

  it('SSE streams the same events, honours Last-Event-ID and closes after complete', async () => {
    const { messageId } = await stack.deliberate({ question: 'SSE', councilModels: ['sim/a', 'sim/b'] });
    const all = await readSse(`${stack.baseUrl}/api/deliberations/${messageId}/events`);
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => i + 1));
    expect(all.every((e) => e.event === e.data.type && e.id === e.data.seq)).toBe(true);
    expect(all.at(-1)?.event).toBe('complete');
    const socketEvents = await stack.follow(messageId);
    expect(socketEvents).toEqual(all.map((e) => e.data));

    const resumed = await readSse(`${stack.baseUrl}/api/deliberations/${messageId}/events`, {
      'Last-Event-ID': '7',
    });
    expect(resumed.map((e) => e.id)).toEqual(all.slice(7).map((e) => e.id));
  });
});
