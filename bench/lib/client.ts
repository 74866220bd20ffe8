import type { DeliveredEvent, LiveEvent } from '@conclave/contracts';
import { Agent, request as httpRequest } from 'node:http';
import { io, type Socket } from 'socket.io-client';

/** Wall-clock milliseconds with sub-millisecond resolution (comparable with Date.now() elsewhere). */
export const now = (): number => performance.timeOrigin + performance.now();

export interface HttpAnswer<T> {
  status: number;
  body: T;
  /** Milliseconds from sending the request to having read the whole answer. */
  ms: number;
  /** When the answer was read (epoch ms). */
  at: number;
}

/**
 * Keep-alive connections for every request the benchmark makes. node:http rather than fetch: the
 * client shares the machine's cores with what it measures, and fetch (undici) costs it several
 * times the CPU per request.
 */
// A free connection is closed after 2 s idle, before the server's keep-alive timeout (5 s) could
// close it under a request just sent on it ("socket hang up").
const agent = new Agent({ keepAlive: true, maxSockets: 128, timeout: 2_000 });

export async function http<T = unknown>(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<HttpAnswer<T>> {
  const started = now();
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const request = httpRequest(
      new URL(`${baseUrl}${path}`),
      {
        method,
        agent,
        headers: payload
          ? { 'content-type': 'application/json', 'content-length': String(payload.length) }
          : {},
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
  const at = now();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  return { status, body: parsed as T, ms: at - started, at };
}

/** POST /api/deliberations; throws unless 202. */
export async function startDeliberation(
  baseUrl: string,
  body: unknown,
): Promise<{ messageId: string; conversationId: string; acceptedAt: number; postMs: number }> {
  const answer = await http<{ messageId: string; conversationId: string }>(
    baseUrl,
    'POST',
    '/api/deliberations',
    body,
  );
  if (answer.status !== 202) {
    throw new Error(
      `POST /api/deliberations: expected 202, got ${answer.status} ${JSON.stringify(answer.body)}`,
    );
  }
  return { ...answer.body, acceptedAt: answer.at, postMs: answer.ms };
}

export async function connect(baseUrl: string): Promise<Socket> {
  const socket = io(`${baseUrl}/deliberations`, {
    transports: ['websocket'],
    reconnection: false,
    timeout: 60_000,
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', (error) => reject(error));
  });
  return socket;
}

export interface Received {
  event: DeliveredEvent;
  /** When the client received it (epoch ms). */
  at: number;
}

/** A live, ephemeral event (`model_delta` / `model_partial`: no seq) and when it arrived. */
export interface ReceivedLive {
  event: LiveEvent;
  /** When the client received it (epoch ms). */
  at: number;
}

export const LIVE_EVENT_TYPES: readonly string[] = ['model_delta', 'model_partial'];

export interface FollowOptions {
  /** Subscribe with `deltas: true`: receive `model_delta` / `model_partial` besides stored events. */
  deltas?: boolean;
}

export interface Followed {
  messageId: string;
  /** Stored events (with seq), in the order they arrived. */
  received: Received[];
  /** Live events (only when followed with `deltas: true`), in the order they arrived, up to the terminal one. */
  live: ReceivedLive[];
  terminal: 'complete' | 'error';
  /** When the terminal event arrived (epoch ms). */
  terminalAt: number;
}

/** Events a Follower received that it had not asked for. */
export interface Unasked {
  /** Events (stored or live) of deliberations this socket never subscribed to, by type. */
  foreign: Record<string, number>;
  /** Live events of a deliberation followed without `deltas: true`. */
  liveWithoutDeltas: number;
  /** A few examples, for the report. */
  samples: { name: string; messageId: string }[];
}

/**
 * One Socket.IO connection following many deliberations: `follow` subscribes (from seq 0) and
 * resolves with every event received once `complete` or `error` arrives. Events that arrive after
 * the terminal one are kept in `late` (by messageId); events nobody asked for are counted in `unasked`.
 */
export class Follower {
  private readonly open = new Map<
    string,
    {
      received: Received[];
      live: ReceivedLive[];
      deltas: boolean;
      resolve: (f: Followed) => void;
      reject: (e: Error) => void;
      timer: NodeJS.Timeout;
    }
  >();
  /** Every deliberation this socket has subscribed to, and whether with deltas. */
  private readonly followed = new Map<string, boolean>();
  /** Events of a followed deliberation that arrived after its terminal event. */
  readonly late = new Map<string, { name: string; at: number; event: DeliveredEvent | LiveEvent }[]>();
  readonly unasked: Unasked = { foreign: {}, liveWithoutDeltas: 0, samples: [] };

  constructor(readonly socket: Socket) {
    socket.onAny((name: string, event: DeliveredEvent | LiveEvent) => {
      const at = now();
      const messageId = event?.messageId;
      if (!messageId) return;
      const isLive = LIVE_EVENT_TYPES.includes(name);
      const deltas = this.followed.get(messageId);
      if (deltas === undefined || (isLive && !deltas)) {
        if (deltas === undefined) this.unasked.foreign[name] = (this.unasked.foreign[name] ?? 0) + 1;
        else this.unasked.liveWithoutDeltas += 1;
        if (this.unasked.samples.length < 5) this.unasked.samples.push({ name, messageId });
        return;
      }
      const entry = this.open.get(messageId);
      if (!entry) {
        const list = this.late.get(messageId) ?? [];
        list.push({ name, at, event });
        this.late.set(messageId, list);
        return;
      }
      if (isLive) {
        entry.live.push({ event: event as LiveEvent, at });
        return;
      }
      entry.received.push({ event: event as DeliveredEvent, at });
      if (name === 'complete' || name === 'error') {
        clearTimeout(entry.timer);
        this.open.delete(messageId);
        entry.resolve({
          messageId,
          received: entry.received,
          live: entry.live,
          terminal: name,
          terminalAt: at,
        });
      }
    });
  }

  static async connect(baseUrl: string): Promise<Follower> {
    return new Follower(await connect(baseUrl));
  }

  /** Subscribes from seq 0; `onSubscribed` gets the time the subscription was acknowledged. */
  async follow(
    messageId: string,
    timeoutMs: number,
    onSubscribed?: (at: number) => void,
    options: FollowOptions = {},
  ): Promise<Followed> {
    const deltas = options.deltas === true;
    const done = new Promise<Followed>((resolve, reject) => {
      const received: Received[] = [];
      const timer = setTimeout(() => {
        this.open.delete(messageId);
        reject(
          new Error(
            `deliberation ${messageId}: no complete/error event within ${timeoutMs} ms (got ${received
              .map((r) => `${r.event.seq}:${r.event.type}`)
              .join(' ')})`,
          ),
        );
      }, timeoutMs);
      this.open.set(messageId, { received, live: [], deltas, resolve, reject, timer });
    });
    this.followed.set(messageId, deltas);
    let ack: { ok?: boolean } | undefined;
    try {
      ack = (await this.socket
        .timeout(60_000)
        .emitWithAck('subscribe', { messageId, afterSeq: 0, ...(deltas ? { deltas: true } : {}) })) as {
        ok?: boolean;
      };
    } catch (error) {
      ack = { ok: false, error: String(error) } as { ok?: boolean };
    }
    if (!ack?.ok) {
      const entry = this.open.get(messageId);
      if (entry) clearTimeout(entry.timer);
      this.open.delete(messageId);
      done.catch(() => undefined);
      throw new Error(`subscribe ${messageId} refused: ${JSON.stringify(ack)}`);
    }
    onSubscribed?.(now());
    return done;
  }

  close(): void {
    for (const entry of this.open.values()) clearTimeout(entry.timer);
    this.open.clear();
    this.socket.disconnect();
  }
}

export interface BatchWatch {
  /** When `batch_complete` arrived (epoch ms). */
  completeAt: number;
  /** Every `batch_progress` snapshot: when it arrived and how many items had ended. */
  progress: { at: number; complete: number; failed: number; running: number }[];
  final: Record<string, unknown>;
}

/** Subscribes to a batch's progress on a socket; resolves on `batch_complete`. */
export async function watchBatch(socket: Socket, batchId: string, timeoutMs: number): Promise<BatchWatch> {
  const progress: BatchWatch['progress'] = [];
  let timer: NodeJS.Timeout | undefined;
  let onProgress: (view: Record<string, unknown>) => void = () => undefined;
  let onComplete: (view: Record<string, unknown>) => void = () => undefined;
  const done = new Promise<BatchWatch>((resolve, reject) => {
    timer = setTimeout(
      () => reject(new Error(`batch ${batchId}: no batch_complete within ${timeoutMs} ms`)),
      timeoutMs,
    );
    onProgress = (view) => {
      if (view.batchId !== batchId) return;
      progress.push({
        at: now(),
        complete: Number(view.complete),
        failed: Number(view.failed),
        running: Number(view.running),
      });
    };
    onComplete = (view) => {
      if (view.batchId !== batchId) return;
      clearTimeout(timer);
      resolve({ completeAt: now(), progress, final: view });
    };
    socket.on('batch_progress', onProgress);
    socket.on('batch_complete', onComplete);
  });
  const ack = (await socket.timeout(60_000).emitWithAck('subscribe', { batchId })) as { ok?: boolean };
  if (!ack?.ok) throw new Error(`subscribe to batch ${batchId} refused: ${JSON.stringify(ack)}`);
  try {
    return await done;
  } finally {
    clearTimeout(timer);
    socket.off('batch_progress', onProgress);
    socket.off('batch_complete', onComplete);
  }
}
