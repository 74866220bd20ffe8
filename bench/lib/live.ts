import type { DeliveredEvent, LiveEvent } from '@conclave/contracts';
import IORedis from 'ioredis';
import type { Followed } from './client';

/** How one client's live text of its deliberation compares with the stored answers. */
export interface LiveTally {
  /** Calls with a stored `model_progress` succeeded event (with `content`) the client received. */
  calls: number;
  /** model_partial (if any) + deltas, stitched by offset, equal `content` exactly. */
  complete: number;
  /** The live text is a strict prefix of `content` (the rest never came as deltas). */
  incomplete: number;
  /** Of `incomplete`: no live text at all, although the call ended after the subscription was acknowledged. */
  noLiveText: number;
  /** No live text, and the call had ended before the subscription was acknowledged: nothing was due. */
  endedBeforeSubscribed: number;
  /** The live text differs from `content` (wrong characters, a gap, or a partial that contradicts the deltas). */
  mismatched: number;
  /** Deltas whose offset lay beyond the text so far (text missing in between). */
  gaps: number;
  /** Deltas whose offset lay before the end of the text so far (text sent twice). */
  overlaps: number;
  /** Calls with live text but no succeeded event received (e.g. the title, or a call that failed). */
  orphanCalls: number;
  /** Succeeded events without a `content` field. */
  withoutContent: number;
  deltas: number;
  partials: number;
  /** Live pieces that arrived after the call's succeeded event. */
  afterSucceeded: number;
  /** Per complete call: arrival of its last live piece − the stored `at` of its succeeded event (ms). */
  lastPieceVsStoredMs: number[];
  /** Per call with deltas: the most deltas that arrived within any 1 s. */
  maxDeltasPerSecond: number[];
  /** Arrival of the first and of the last delta (epoch ms), for rates. */
  firstDeltaAt: number;
  lastDeltaAt: number;
  /** A few descriptions of what went wrong, for the report. */
  examples: string[];
  /** Every call checked (at most 20 000), with how it ended, to look it up elsewhere. */
  perCall: CheckedCall[];
}

export interface CheckedCall {
  stage: string;
  participant: string | number;
  outcome: 'complete' | 'incomplete' | 'mismatched' | 'ended before subscribing';
  /** Characters stitched from the live pieces, and of the stored answer. */
  liveChars: number;
  contentChars: number;
  /** When this client received its last live piece of the call, and the call's succeeded event (epoch ms). */
  lastPieceAt: number | null;
  succeededAt: number;
}

export function emptyTally(): LiveTally {
  return {
    calls: 0,
    complete: 0,
    incomplete: 0,
    noLiveText: 0,
    endedBeforeSubscribed: 0,
    mismatched: 0,
    gaps: 0,
    overlaps: 0,
    orphanCalls: 0,
    withoutContent: 0,
    deltas: 0,
    partials: 0,
    afterSucceeded: 0,
    lastPieceVsStoredMs: [],
    maxDeltasPerSecond: [],
    firstDeltaAt: Infinity,
    lastDeltaAt: -Infinity,
    examples: [],
    perCall: [],
  };
}

/** Adds `from` into `into` (arrays concatenated, examples capped). */
export function mergeTally(into: LiveTally, from: LiveTally): void {
  for (const key of Object.keys(into) as (keyof LiveTally)[]) {
    const a = into[key];
    const b = from[key];
    if (key === 'firstDeltaAt' || key === 'lastDeltaAt') continue;
    if (typeof a === 'number' && typeof b === 'number')
      (into as unknown as Record<string, number>)[key] = a + b;
  }
  for (const v of from.lastPieceVsStoredMs) into.lastPieceVsStoredMs.push(v);
  for (const v of from.maxDeltasPerSecond) into.maxDeltasPerSecond.push(v);
  into.firstDeltaAt = Math.min(into.firstDeltaAt, from.firstDeltaAt);
  into.lastDeltaAt = Math.max(into.lastDeltaAt, from.lastDeltaAt);
  for (const e of from.examples) if (into.examples.length < 8) into.examples.push(e);
  for (const f of from.perCall) if (into.perCall.length < 20_000) into.perCall.push(f);
}

const callKey = (stage: string, participant: string | number) => `${stage}\u0000${String(participant)}`;

function maxInWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end++) {
    while (sorted[end] - sorted[start] >= windowMs) start++;
    best = Math.max(best, end - start + 1);
  }
  return best;
}

/**
 * Stitches the live pieces a client received for one deliberation (model_partial, then model_delta
 * at their offsets, in arrival order) per call (stage + participant) and compares each call's text
 * with the `content` of its stored `model_progress` succeeded event.
 *
 * `extra` are live events of the deliberation that arrived after its terminal event; `subscribedAt`
 * is when the subscription was acknowledged (calls that ended before it owe no live text).
 */
export function tallyLive(
  followed: Pick<Followed, 'received' | 'live'>,
  subscribedAt: number,
  extra: { at: number; event: LiveEvent }[] = [],
  label = '',
): LiveTally {
  const tally = emptyTally();
  const example = (text: string) => {
    if (tally.examples.length < 8) tally.examples.push(`${label}${text}`);
  };
  interface CallText {
    text: string;
    broken: string | null;
    deltas: number[];
    lastAt: number;
  }
  const calls = new Map<string, CallText>();
  for (const { event, at } of [...followed.live, ...extra]) {
    const key = callKey(event.stage, event.participant);
    const call = calls.get(key) ?? { text: '', broken: null, deltas: [], lastAt: 0 };
    calls.set(key, call);
    call.lastAt = Math.max(call.lastAt, at);
    if (event.type === 'model_partial') {
      tally.partials += 1;
      if (event.text.startsWith(call.text)) call.text = event.text;
      else if (!call.text.startsWith(event.text)) {
        call.broken ??= `partial "${event.text.slice(0, 40)}…" contradicts the ${call.text.length} characters so far`;
      }
      continue;
    }
    tally.deltas += 1;
    tally.firstDeltaAt = Math.min(tally.firstDeltaAt, at);
    tally.lastDeltaAt = Math.max(tally.lastDeltaAt, at);
    call.deltas.push(at);
    if (event.offset > call.text.length) {
      tally.gaps += 1;
      call.broken ??= `gap: delta at offset ${event.offset} after ${call.text.length} characters`;
      // Keep stitching at the offset the gateway claims, so later pieces can still be compared.
      call.text = call.text.padEnd(event.offset, '\u0000') + event.text;
    } else if (event.offset < call.text.length) {
      tally.overlaps += 1;
      const overlap = call.text.slice(event.offset, event.offset + event.text.length);
      if (!event.text.startsWith(overlap)) {
        call.broken ??= `delta at offset ${event.offset} rewrites "${overlap.slice(0, 30)}" as "${event.text.slice(0, 30)}"`;
      }
      call.text =
        call.text.slice(0, event.offset) + event.text + call.text.slice(event.offset + event.text.length);
    } else {
      call.text += event.text;
    }
  }
  const seen = new Set<string>();
  for (const { event } of followed.received) {
    const progress = event as DeliveredEvent<{
      stage?: string;
      participant?: string | number;
      state?: string;
      content?: unknown;
    }>;
    if (progress.type !== 'model_progress' || progress.state !== 'succeeded') continue;
    const key = callKey(String(progress.stage), progress.participant ?? '');
    seen.add(key);
    tally.calls += 1;
    if (typeof progress.content !== 'string') {
      tally.withoutContent += 1;
      example(`${progress.stage}/${progress.participant}: succeeded event without content`);
      continue;
    }
    const content = progress.content;
    const storedAt = Date.parse(progress.at);
    const call = calls.get(key);
    const succeededAt = followed.received.find((r) => r.event === event)?.at ?? Infinity;
    const checked = (outcome: CheckedCall['outcome']) =>
      tally.perCall.push({
        stage: String(progress.stage),
        participant: progress.participant ?? '',
        outcome,
        liveChars: call?.text.length ?? 0,
        contentChars: content.length,
        lastPieceAt: call ? call.lastAt : null,
        succeededAt,
      });
    if (call && call.deltas.length > 0) tally.maxDeltasPerSecond.push(maxInWindow(call.deltas, 1000));
    if (call) {
      for (const t of call.deltas) if (t > succeededAt) tally.afterSucceeded += 1;
    }
    if (!call || call.text === '') {
      if (storedAt <= subscribedAt) {
        tally.endedBeforeSubscribed += 1;
        checked('ended before subscribing');
      } else {
        tally.incomplete += 1;
        tally.noLiveText += 1;
        checked('incomplete');
        example(
          `${progress.stage}/${progress.participant}: no live text (call stored ${Math.round(storedAt - subscribedAt)} ms after the subscription was acknowledged)`,
        );
      }
      continue;
    }
    if (call.broken !== null || !content.startsWith(call.text)) {
      tally.mismatched += 1;
      checked('mismatched');
      const at = [...call.text].findIndex((c, i) => c !== content[i]);
      example(
        `${progress.stage}/${progress.participant}: ${call.broken ?? `live text differs from content at character ${at} (live ${call.text.length}, content ${content.length} characters)`}`,
      );
    } else if (call.text.length === content.length) {
      tally.complete += 1;
      checked('complete');
      tally.lastPieceVsStoredMs.push(call.lastAt - storedAt);
    } else {
      tally.incomplete += 1;
      checked('incomplete');
      example(
        `${progress.stage}/${progress.participant}: live text stops at ${call.text.length} of ${content.length} characters`,
      );
    }
  }
  for (const key of calls.keys()) if (!seen.has(key)) tally.orphanCalls += 1;
  return tally;
}

/** Stored events a client received compared with what PostgreSQL holds for the deliberation. */
export interface StoredTally {
  expected: number;
  received: number;
  missing: number;
  duplicated: number;
  outOfOrder: number;
  wrongType: number;
}

export function tallyStored(
  followed: Pick<Followed, 'received'>,
  stored: { seq: number; type: string }[],
): StoredTally {
  const seqs = followed.received.map((r) => r.event.seq);
  const unique = new Set(seqs);
  let outOfOrder = 0;
  for (let i = 1; i < seqs.length; i++) if (seqs[i] <= seqs[i - 1]) outOfOrder += 1;
  let wrongType = 0;
  for (const r of followed.received) {
    const want = stored[r.event.seq - 1];
    if (!want || want.type !== r.event.type) wrongType += 1;
  }
  return {
    expected: stored.length,
    received: seqs.length,
    missing: stored.filter((s) => !unique.has(s.seq)).length,
    duplicated: seqs.length - unique.size,
    outOfOrder,
    wrongType,
  };
}

/** Counters of a Redis server (INFO stats and commandstats), to diff around a measured window. */
export interface RedisCounters {
  commands: number;
  publishes: number;
  netInBytes: number;
  netOutBytes: number;
  pubsubChannels: number;
}

/** Reads the counters; null when the server cannot be asked (they are a courtesy of the report). */
export async function readRedisCounters(url: string): Promise<RedisCounters | null> {
  const redis = new IORedis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    const stats = await redis.info('stats');
    const commandstats = await redis.info('commandstats');
    const field = (text: string, name: string) =>
      Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(text)?.[1] ?? 0);
    return {
      commands: field(stats, 'total_commands_processed'),
      netInBytes: field(stats, 'total_net_input_bytes'),
      netOutBytes: field(stats, 'total_net_output_bytes'),
      pubsubChannels: field(stats, 'pubsub_channels'),
      publishes: Number(/^cmdstat_publish:calls=(\d+)/m.exec(commandstats)?.[1] ?? 0),
    };
  } catch {
    return null;
  } finally {
    redis.disconnect();
  }
}

export function diffRedis(from: RedisCounters | null, to: RedisCounters | null): RedisCounters | null {
  if (!from || !to) return null;
  return {
    commands: to.commands - from.commands,
    publishes: to.publishes - from.publishes,
    netInBytes: to.netInBytes - from.netInBytes,
    netOutBytes: to.netOutBytes - from.netOutBytes,
    pubsubChannels: to.pubsubChannels,
  };
}

/** What one listener on Redis saw of a message: its live pieces per call, and its stored events. */
interface Tapped {
  /** Per call (stage + participant): the furthest character published, and when the last piece came. */
  calls: Map<string, { end: number; endAt: number }>;
  /** Per call: when its succeeded event came on the events channel. */
  succeededAt: Map<string, number>;
  terminalAt: number | null;
}

/**
 * A listener on the bench's Redis beside the gateways: every live channel (PSUBSCRIBE) and the
 * events channel on ONE connection, so it sees the workers' publishes in the order Redis applied
 * them. It tells whether a piece a client missed was published at all, and whether it was published
 * before the deliberation's terminal event. (Its subscription counts in PUBLISH's answer; the
 * gateways subscribe to the same channels throughout, so workers behave as without it.)
 */
export class LiveTap {
  private readonly byMessage = new Map<string, Tapped>();
  messages = 0;
  /** Roughly what Redis sent this listener (payloads, channel names, RESP framing): to subtract from INFO's net out. */
  bytes = 0;

  private constructor(private readonly redis: IORedis) {}

  static async start(redisUrl: string, prefix: string): Promise<LiveTap> {
    const redis = new IORedis(redisUrl, { maxRetriesPerRequest: null });
    redis.on('error', () => undefined);
    const tap = new LiveTap(redis);
    const livePrefix = `${prefix}:live:`;
    const events = `${prefix}:events`;
    redis.on('pmessage', (pattern: string, channel: string, raw: string) => {
      tap.bytes += Buffer.byteLength(raw) + pattern.length + channel.length + 40;
      tap.live(channel.slice(livePrefix.length), raw);
    });
    redis.on('message', (channel: string, raw: string) => {
      tap.bytes += Buffer.byteLength(raw) + channel.length + 30;
      if (channel === events) tap.stored(raw);
    });
    await redis.psubscribe(`${livePrefix}*`);
    await redis.subscribe(events);
    return tap;
  }

  private of(messageId: string): Tapped {
    let tapped = this.byMessage.get(messageId);
    if (!tapped) {
      tapped = { calls: new Map(), succeededAt: new Map(), terminalAt: null };
      this.byMessage.set(messageId, tapped);
    }
    return tapped;
  }

  private live(messageId: string, raw: string): void {
    const at = performance.timeOrigin + performance.now();
    this.messages += 1;
    let message: { kind?: string; deltas?: unknown[]; partials?: unknown[] };
    try {
      message = JSON.parse(raw) as typeof message;
    } catch {
      return;
    }
    const pieces = (message.kind === 'deltas' ? message.deltas : message.partials) ?? [];
    const tapped = this.of(messageId);
    for (const piece of pieces as {
      stage: string;
      participant: string | number;
      text: string;
      offset?: number;
    }[]) {
      const key = callKey(piece.stage, piece.participant);
      const end = (piece.offset ?? 0) + piece.text.length;
      const call = tapped.calls.get(key) ?? { end: 0, endAt: 0 };
      if (end > call.end) {
        call.end = end;
        call.endAt = at;
      }
      tapped.calls.set(key, call);
    }
  }

  private stored(raw: string): void {
    const at = performance.timeOrigin + performance.now();
    let events: DeliveredEvent<{ stage?: string; participant?: string | number; state?: string }>[];
    try {
      events = JSON.parse(raw) as typeof events;
    } catch {
      return;
    }
    for (const event of Array.isArray(events) ? events : []) {
      if (!event?.messageId) continue;
      const tapped = this.of(event.messageId);
      if (event.type === 'model_progress' && event.state === 'succeeded') {
        tapped.succeededAt.set(callKey(String(event.stage), event.participant ?? ''), at);
      }
      if (['complete', 'error', 'cancelled'].includes(event.type)) tapped.terminalAt ??= at;
    }
  }

  /**
   * What Redis carried of one call: how far its published text went, when the piece that took it
   * there came, and when the call's succeeded event and the message's terminal event came.
   */
  call(
    messageId: string,
    stage: string,
    participant: string | number,
  ): { publishedChars: number; endAt: number | null; succeededAt: number | null; terminalAt: number | null } {
    const tapped = this.byMessage.get(messageId);
    const key = callKey(stage, participant);
    const call = tapped?.calls.get(key);
    return {
      publishedChars: call?.end ?? 0,
      endAt: call?.endAt ?? null,
      succeededAt: tapped?.succeededAt.get(key) ?? null,
      terminalAt: tapped?.terminalAt ?? null,
    };
  }

  stop(): void {
    this.redis.disconnect();
  }
}
