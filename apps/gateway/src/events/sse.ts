import type { EventEmitter } from 'node:events';
import type { Response } from 'express';
import { Outflow, outflowLimits, type OutflowLimits } from './outflow';

/*
 * The one set-up of a streamed answer: the SSE headers and heartbeat (deliberation events,
 * `/v1` streaming) and the Outflow that bounds what a client has not read (those two and the
 * Socket.IO connection that carries deliberation and batch events).
 */

/** A comment line every this often while a stream waits, so that proxies and clients keep it open. */
export const HEARTBEAT_MS = 15_000;

const SSE_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache, no-transform',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
} as const;

/**
 * Sends the SSE headers (200) and starts the heartbeat: `comment` every HEARTBEAT_MS while the
 * response is open, then `onBeat` (a look at the client's backlog, say). Returns its stop.
 */
export function startSse(response: Response, comment: string, onBeat?: () => void): () => void {
  response.writeHead(200, SSE_HEADERS);
  const heartbeat = setInterval(() => {
    if (response.writableEnded) return;
    response.write(comment);
    onBeat?.();
  }, HEARTBEAT_MS);
  return () => clearInterval(heartbeat);
}

/**
 * An Outflow over a client whose unread bytes `buffered` counts and whose `drainSource()` (read
 * when a sender starts waiting) emits `drain` as the network takes them.
 */
export function drainingOutflow(
  buffered: () => number,
  drainSource: () => EventEmitter,
  limits: OutflowLimits,
  onSlow: (detail: string) => void,
): Outflow {
  return new Outflow(buffered, limits, onSlow, (wake) => {
    const source = drainSource();
    source.on('drain', wake);
    return () => source.off('drain', wake);
  });
}

/** The Outflow of an SSE response, within the STREAM_* limits. */
export const responseOutflow = (
  response: Response,
  streams: { maxBufferedBytes: number; drainTimeoutMs: number },
  onSlow: (detail: string) => void,
): Outflow =>
  drainingOutflow(
    () => response.writableLength,
    () => response,
    outflowLimits(streams),
    onSlow,
  );
