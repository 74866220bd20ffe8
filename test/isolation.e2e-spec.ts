import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import {
  GATEWAY_METADATA,
  GATEWAY_OPTIONS,
  MESSAGE_MAPPING_METADATA,
  MESSAGE_METADATA,
} from '@nestjs/websockets/constants';
import type { BatchComparison, BatchReport, BatchView, DeliberationView } from '@conclave/contracts';
import { hashApiKey } from '@conclave/persistence';
import type { Socket } from 'socket.io-client';
import { TestStack } from './support/harness';

/**
 * Isolation matrix: for every HTTP route and every Socket.IO message, user B gets for user A's ids
 * exactly what it gets for an id nobody has (404, never 403: existence is not confirmed), nothing of
 * A's changes, and A itself can still use the route on its ids (so no probe passes vacuously).
 */

const COUNCIL = ['sim/a', 'sim/b'];
const JURY = {
  content: 'Water boils at 100 degrees Celsius at sea level.',
  jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'],
  foremanModel: 'sim/foreman',
};
/** Slow enough that A's batch is still running while B probes it. */
const SLOW_BATCH = {
  name: 'alice batch',
  defaults: { mode: 'council', councilModels: ['sim/a:delay3000', 'sim/b'], chairmanModel: 'sim/c' },
  items: [{ question: 'Batch one?' }, { question: 'Batch two?' }, { question: 'Batch three?' }],
  concurrency: 1,
};

interface Fixture {
  councilConversation: string;
  councilMessage: string;
  followUpMessage: string;
  userMessage: string;
  juryConversation: string;
  juryMessage: string;
  batchId: string;
  itemMessage: string;
  itemConversation: string;
}

/** Every id A owns, of every kind: each id route is probed with all of them. */
const idsOf = (fx: Fixture): string[] => Object.values(fx);

interface Req {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** How the key travels: the Authorization header, or ?access_token= (EventSource). */
  via?: 'header' | 'query';
}

interface Reply {
  status: number;
  type: string | null;
  body: unknown;
}

interface HttpEntry {
  method: Req['method'];
  /** The route as Express registered it. */
  path: string;
  /** Public routes take no key and must carry none of A's data. */
  access: 'public' | 'user';
  /** B's requests on an id (A's, or an unknown one): each must answer the same for both. */
  probes?: ((id: string) => Req)[];
  /** What B gets for an unknown id. */
  unknownStatus?: number;
  /** Extra checks of B on routes without an id (lists, submissions). */
  foreign?: (fx: Fixture) => Promise<void>;
  /** A request for the 401 checks. */
  sample: (fx: Fixture) => Req;
  /** The positive control: A on its own ids. */
  own: (fx: Fixture) => Promise<void>;
}

interface SocketEntry {
  message: string;
  probes: ((id: string) => unknown)[];
  unknownAck: (ack: unknown) => void;
  own: (fx: Fixture) => Promise<void>;
}

function expressRoutes(app: INestApplication): string[] {
  type Layer = { route?: { path: string; methods: Record<string, boolean> } };
  const express = app.getHttpAdapter().getInstance() as { router: { stack: Layer[] } };
  return express.router.stack.flatMap((layer) =>
    layer.route
      ? Object.keys(layer.route.methods)
          .filter((m) => m !== '_all')
          .map((m) => `${m.toUpperCase()} ${layer.route!.path}`)
      : [],
  );
}

function socketMessages(app: INestApplication): string[] {
  const found: string[] = [];
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.providers.values()) {
      const type = wrapper.metatype as (new (...args: never[]) => unknown) | null;
      if (typeof type !== 'function' || !Reflect.getMetadata(GATEWAY_METADATA, type)) continue;
      const namespace =
        (Reflect.getMetadata(GATEWAY_OPTIONS, type) as { namespace?: string })?.namespace ?? '/';
      for (let proto = type.prototype as object; proto && proto !== Object.prototype;) {
        for (const name of Object.getOwnPropertyNames(proto)) {
          const handler = Object.getOwnPropertyDescriptor(proto, name)?.value as unknown;
          if (typeof handler === 'function' && Reflect.getMetadata(MESSAGE_MAPPING_METADATA, handler))
            found.push(`${namespace} ${String(Reflect.getMetadata(MESSAGE_METADATA, handler))}`);
        }
        proto = Object.getPrototypeOf(proto) as object;
      }
    }
  }
  return [...new Set(found)];
}

/** The id in a reply replaced by a placeholder: a 404 may echo the id it was asked about. */
function normalize(reply: Reply | unknown, id: string): unknown {
  return JSON.parse(JSON.stringify(reply).split(id).join(':id')) as unknown;
}

describe('isolation: a user never reaches another user’s conversations, messages, events or batches', () => {
  // Rate limits off: B sends a few hundred probes in a few seconds, and over a hundred wrong keys.
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
    RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
    AUTH_FAILURES_PER_MINUTE: '0',
  });
  let alice = '';
  let bob = '';
  let revoked = '';
  const fx = {} as Fixture;
  let aliceSocket: Socket;
  let watcher: Socket;
  const watched: { name: string; event: { messageId?: string; batchId?: string; status?: string } }[] = [];
  const bobReceived: string[] = [];
  let firstAccepted: unknown;
  let batchAccepted: unknown;

  async function call(token: string | undefined, req: Req): Promise<Reply> {
    const headers: Record<string, string> = { ...(req.headers ?? {}) };
    let url = req.url;
    if (token && req.via === 'query') url += `${url.includes('?') ? '&' : '?'}access_token=${token}`;
    else if (token) headers.authorization = `Bearer ${token}`;
    if (req.body !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(`${stack.baseUrl}${url}`, {
      method: req.method,
      headers,
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // a stream or a CSV: compared as text
    }
    return { status: response.status, type: response.headers.get('content-type'), body };
  }

  const as = async <T>(token: string, req: Req) => (await call(token, req)) as Reply & { body: T };

  /** B's answer for each of A's ids equals its answer for an unknown id. */
  async function sameAsUnknown(probe: (id: string) => Req, unknownStatus: number): Promise<void> {
    const random = randomUUID();
    const unknown = normalize(await call(bob, probe(random)), random) as Reply;
    expect(unknown.status).toBe(unknownStatus);
    for (const id of idsOf(fx)) {
      const reply = await call(bob, probe(id));
      expect({ id, probe: probe(':id'), reply: normalize(reply, id) }).toEqual({
        id,
        probe: probe(':id'),
        reply: unknown,
      });
    }
  }

  const completeOver = async (socket: Socket, messageId: string) => {
    const events = await stack.follow(messageId, { socket, timeoutMs: 20_000 });
    expect(events.at(-1)?.type).toBe('complete');
    return events;
  };

  const council = (question: string, conversationId?: string) => ({
    question,
    councilModels: COUNCIL,
    ...(conversationId ? { conversationId } : {}),
  });

  const HTTP: HttpEntry[] = [
    {
      method: 'GET',
      path: '/api/models',
      access: 'user',
      foreign: async (a) => {
        const reply = await as<unknown>(bob, { method: 'GET', url: '/api/models' });
        expect(reply.status).toBe(200);
        for (const id of idsOf(a)) expect(JSON.stringify(reply.body)).not.toContain(id);
      },
      sample: () => ({ method: 'GET', url: '/api/models' }),
      own: async () => {
        const reply = await as<{ models: { id: string }[] }>(alice, { method: 'GET', url: '/api/models' });
        expect(reply.body.models.map((m) => m.id)).toContain('sim/athena');
      },
    },
    {
      method: 'GET',
      path: '/api/conversations',
      access: 'user',
      foreign: async (a) => {
        const list = await as<{ id: string }[]>(bob, { method: 'GET', url: '/api/conversations' });
        expect(list.status).toBe(200);
        const ids = list.body.map((c) => c.id);
        for (const id of idsOf(a)) expect(ids).not.toContain(id);
      },
      sample: () => ({ method: 'GET', url: '/api/conversations' }),
      own: async (a) => {
        const list = await as<{ id: string }[]>(alice, { method: 'GET', url: '/api/conversations' });
        expect(list.body.map((c) => c.id)).toEqual(
          expect.arrayContaining([a.councilConversation, a.juryConversation, a.itemConversation]),
        );
      },
    },
    {
      method: 'GET',
      path: '/api/conversations/:id',
      access: 'user',
      probes: [(id) => ({ method: 'GET', url: `/api/conversations/${id}` })],
      unknownStatus: 404,
      sample: (a) => ({ method: 'GET', url: `/api/conversations/${a.councilConversation}` }),
      own: async (a) => {
        const got = await as<{ messages: { id: string }[] }>(alice, {
          method: 'GET',
          url: `/api/conversations/${a.councilConversation}`,
        });
        expect(got.status).toBe(200);
        expect(got.body.messages.map((m) => m.id)).toEqual(
          expect.arrayContaining([a.userMessage, a.councilMessage, a.followUpMessage]),
        );
      },
    },
    {
      method: 'GET',
      path: '/api/deliberations/:messageId',
      access: 'user',
      probes: [(id) => ({ method: 'GET', url: `/api/deliberations/${id}` })],
      unknownStatus: 404,
      sample: (a) => ({ method: 'GET', url: `/api/deliberations/${a.councilMessage}` }),
      own: async (a) => {
        for (const id of [a.councilMessage, a.followUpMessage, a.juryMessage, a.itemMessage]) {
          const got = await as<DeliberationView>(alice, { method: 'GET', url: `/api/deliberations/${id}` });
          expect(got.status).toBe(200);
          expect(got.body.messageId).toBe(id);
        }
      },
    },
    {
      method: 'GET',
      path: '/api/deliberations/:messageId/events',
      access: 'user',
      probes: [
        (id) => ({ method: 'GET', url: `/api/deliberations/${id}/events` }),
        (id) => ({ method: 'GET', url: `/api/deliberations/${id}/events`, via: 'query' }),
        (id) => ({ method: 'GET', url: `/api/deliberations/${id}/events?lastEventId=999`, via: 'query' }),
        (id) => ({
          method: 'GET',
          url: `/api/deliberations/${id}/events`,
          headers: { 'last-event-id': '1' },
        }),
      ],
      unknownStatus: 404,
      sample: (a) => ({ method: 'GET', url: `/api/deliberations/${a.councilMessage}/events`, via: 'query' }),
      own: async (a) => {
        // A completed deliberation replays its events, then the stream ends.
        const stream = await as<string>(alice, {
          method: 'GET',
          url: `/api/deliberations/${a.councilMessage}/events`,
          via: 'query',
        });
        expect(stream.status).toBe(200);
        expect(stream.type).toMatch(/text\/event-stream/);
        expect(stream.body).toContain(`"messageId":"${a.councilMessage}"`);
        expect(stream.body).toContain('event: complete');
        const done = await call(alice, {
          method: 'GET',
          url: `/api/deliberations/${a.councilMessage}/events?lastEventId=999`,
          via: 'query',
        });
        expect(done.status).toBe(204);
      },
    },
    {
      method: 'GET',
      path: '/api/batches',
      access: 'user',
      foreign: async (a) => {
        const list = await as<BatchView[]>(bob, { method: 'GET', url: '/api/batches' });
        expect(list.status).toBe(200);
        expect(list.body.map((b) => b.batchId)).not.toContain(a.batchId);
      },
      sample: () => ({ method: 'GET', url: '/api/batches' }),
      own: async (a) => {
        const list = await as<BatchView[]>(alice, { method: 'GET', url: '/api/batches' });
        expect(list.body.map((b) => b.batchId)).toContain(a.batchId);
      },
    },
    {
      method: 'GET',
      path: '/api/batches/:id',
      access: 'user',
      probes: [(id) => ({ method: 'GET', url: `/api/batches/${id}` })],
      unknownStatus: 404,
      sample: (a) => ({ method: 'GET', url: `/api/batches/${a.batchId}` }),
      own: async (a) => {
        const got = await as<BatchView>(alice, { method: 'GET', url: `/api/batches/${a.batchId}` });
        expect(got.status).toBe(200);
        expect(got.body).toMatchObject({ batchId: a.batchId, total: 3 });
        expect(['queued', 'running']).toContain(got.body.status);
      },
    },
    {
      method: 'GET',
      path: '/api/batches/:id/results',
      access: 'user',
      probes: [
        (id) => ({ method: 'GET', url: `/api/batches/${id}/results` }),
        (id) => ({ method: 'GET', url: `/api/batches/${id}/results?format=csv` }),
      ],
      unknownStatus: 404,
      sample: (a) => ({ method: 'GET', url: `/api/batches/${a.batchId}/results` }),
      own: async (a) => {
        const jsonl = await as<string>(alice, { method: 'GET', url: `/api/batches/${a.batchId}/results` });
        expect(jsonl.status).toBe(200);
        expect(jsonl.body.trim().split('\n')).toHaveLength(3);
        expect(jsonl.body).toContain(a.itemMessage);
        const csv = await as<string>(alice, {
          method: 'GET',
          url: `/api/batches/${a.batchId}/results?format=csv`,
        });
        expect(csv.status).toBe(200);
        expect(csv.body).toContain(a.itemConversation);
      },
    },
    {
      method: 'GET',
      path: '/api/batches/:id/report',
      access: 'user',
      probes: [
        (id) => ({ method: 'GET', url: `/api/batches/${id}/report` }),
        (id) => ({ method: 'GET', url: `/api/batches/${id}/report?format=md` }),
      ],
      unknownStatus: 404,
      sample: (a) => ({ method: 'GET', url: `/api/batches/${a.batchId}/report` }),
      own: async (a) => {
        const got = await as<BatchReport>(alice, { method: 'GET', url: `/api/batches/${a.batchId}/report` });
        expect(got.status).toBe(200);
        expect(got.body).toMatchObject({ batchId: a.batchId, modes: ['council'], items: { total: 3 } });
        const md = await as<string>(alice, {
          method: 'GET',
          url: `/api/batches/${a.batchId}/report?format=md`,
        });
        expect(md.status).toBe(200);
        expect(md.body).toContain(a.batchId);
      },
    },
    {
      method: 'GET',
      path: '/api/batches/compare',
      access: 'user',
      probes: [
        (id) => ({ method: 'GET', url: `/api/batches/compare?a=${id}&b=${id}` }),
        (id) => ({ method: 'GET', url: `/api/batches/compare?a=${id}&b=${id}&format=md` }),
      ],
      unknownStatus: 404,
      sample: (a) => ({ method: 'GET', url: `/api/batches/compare?a=${a.batchId}&b=${a.batchId}` }),
      own: async (a) => {
        const got = await as<BatchComparison>(alice, {
          method: 'GET',
          url: `/api/batches/compare?a=${a.batchId}&b=${a.batchId}`,
        });
        expect(got.status).toBe(200);
        expect(got.body).toMatchObject({ mode: 'council', matchedBy: 'index', pairs: 3 });
      },
    },
    {
      method: 'POST',
      path: '/api/deliberations',
      access: 'user',
      probes: [
        // A council follow-up to anything of A's: a jury conversation (mode mismatch), a running batch
        // item (409 for A) or a message id all answer like an unknown conversation.
        (id) => ({ method: 'POST', url: '/api/deliberations', body: council('Let me in', id) }),
        (id) => ({
          method: 'POST',
          url: '/api/deliberations',
          body: { question: 'Let me in', mode: 'jury', modeConfig: JURY, conversationId: id },
        }),
      ],
      unknownStatus: 404,
      foreign: async () => {
        // Idempotency keys are per user: A's key means nothing to B (no 422, no replay of A's ids).
        const invalid = { question: '' };
        const withAlicesKey = await call(bob, {
          method: 'POST',
          url: '/api/deliberations',
          body: invalid,
          headers: { 'idempotency-key': 'alice-deliberation' },
        });
        const withFreshKey = await call(bob, {
          method: 'POST',
          url: '/api/deliberations',
          body: invalid,
          headers: { 'idempotency-key': randomUUID() },
        });
        expect(withAlicesKey.status).toBe(400);
        expect(withAlicesKey).toEqual(withFreshKey);
      },
      sample: (a) => ({
        method: 'POST',
        url: '/api/deliberations',
        body: council('Follow-up', a.councilConversation),
      }),
      own: async (a) => {
        const replay = await call(alice, {
          method: 'POST',
          url: '/api/deliberations',
          body: council('Private question'),
          headers: { 'idempotency-key': 'alice-deliberation' },
        });
        expect(replay).toMatchObject({ status: 202, body: firstAccepted });
        const followUp = await as<{ conversationId: string; messageId: string }>(alice, {
          method: 'POST',
          url: '/api/deliberations',
          body: council('One more thing', a.councilConversation),
        });
        expect(followUp.status).toBe(202);
        expect(followUp.body.conversationId).toBe(a.councilConversation);
        await completeOver(aliceSocket, followUp.body.messageId);
      },
    },
    {
      method: 'POST',
      path: '/api/deliberations/:messageId/cancel',
      access: 'user',
      // B's stop of A's running batch item, or of anything else of A's, stops nothing (the snapshot).
      probes: [(id) => ({ method: 'POST', url: `/api/deliberations/${id}/cancel` })],
      unknownStatus: 404,
      sample: (a) => ({ method: 'POST', url: `/api/deliberations/${a.councilMessage}/cancel` }),
      own: async (a) => {
        // A reaches its own deliberation: finished, so the stop is refused naming its status.
        const refused = await as<{ message: string }>(alice, {
          method: 'POST',
          url: `/api/deliberations/${a.councilMessage}/cancel`,
        });
        expect(refused.status).toBe(409);
        expect(refused.body.message).toMatch(/\(status: complete\)/);
      },
    },
    {
      method: 'POST',
      path: '/api/batches',
      access: 'user',
      // Batch items never continue a conversation, whoever owns it.
      probes: [
        (id) => ({
          method: 'POST',
          url: '/api/batches',
          body: { items: [{ question: 'Mine now?', conversationId: id }] },
        }),
      ],
      unknownStatus: 400,
      foreign: async () => {
        const invalid = { items: [] };
        const withAlicesKey = await call(bob, {
          method: 'POST',
          url: '/api/batches',
          body: invalid,
          headers: { 'idempotency-key': 'alice-batch' },
        });
        const withFreshKey = await call(bob, {
          method: 'POST',
          url: '/api/batches',
          body: invalid,
          headers: { 'idempotency-key': randomUUID() },
        });
        expect(withAlicesKey.status).toBe(400);
        expect(withAlicesKey).toEqual(withFreshKey);
      },
      sample: () => ({ method: 'POST', url: '/api/batches', body: SLOW_BATCH }),
      own: async () => {
        const replay = await call(alice, {
          method: 'POST',
          url: '/api/batches',
          body: SLOW_BATCH,
          headers: { 'idempotency-key': 'alice-batch' },
        });
        expect(replay).toMatchObject({ status: 202, body: batchAccepted });
      },
    },
    {
      method: 'POST',
      path: '/api/batches/:id/cancel',
      access: 'user',
      probes: [(id) => ({ method: 'POST', url: `/api/batches/${id}/cancel` })],
      unknownStatus: 404,
      sample: (a) => ({ method: 'POST', url: `/api/batches/${a.batchId}/cancel` }),
      own: async (a) => {
        const cancelled = await as<BatchView>(alice, {
          method: 'POST',
          url: `/api/batches/${a.batchId}/cancel`,
        });
        expect(cancelled.status).toBe(200);
        expect(cancelled.body).toMatchObject({ batchId: a.batchId, status: 'cancelled', queued: 0 });
      },
    },
    {
      method: 'POST',
      path: '/api/batches/:id/retry-failed',
      access: 'user',
      probes: [(id) => ({ method: 'POST', url: `/api/batches/${id}/retry-failed` })],
      unknownStatus: 404,
      sample: (a) => ({ method: 'POST', url: `/api/batches/${a.batchId}/retry-failed` }),
      own: async (a) => {
        // Cancelled above, nothing of it failed: nothing to retry (or, not yet finished, still running).
        const retried = await as<{ message: string }>(alice, {
          method: 'POST',
          url: `/api/batches/${a.batchId}/retry-failed`,
        });
        expect(retried.status).toBe(409);
        expect(retried.body.message).toMatch(/no failed items|still (queued|running)/);
      },
    },
    {
      method: 'GET',
      path: '/api/budget',
      access: 'user',
      foreign: async () => {
        const own = await as<{ monthlyBudgetUsd: number | null }>(bob, { method: 'GET', url: '/api/budget' });
        expect(own).toMatchObject({ status: 200, body: { monthlyBudgetUsd: null } });
      },
      sample: () => ({ method: 'GET', url: '/api/budget' }),
      own: async () => {
        const own = await as<{ monthlyBudgetUsd: number | null }>(alice, {
          method: 'GET',
          url: '/api/budget',
        });
        expect(own).toMatchObject({ status: 200, body: { monthlyBudgetUsd: null } });
      },
    },
    ...(['GET', 'PUT'] as const).map((method): HttpEntry => ({
      method,
      path: '/api/admin/users/:name/budget',
      access: 'user',
      // Neither is an admin: 403 whatever the name.
      probes: [
        (id) => ({
          method,
          url: `/api/admin/users/${id}/budget`,
          body: method === 'PUT' ? { monthlyBudgetUsd: 1 } : undefined,
        }),
      ],
      unknownStatus: 403,
      sample: () => ({ method, url: '/api/admin/users/alice/budget' }),
      own: async () => {
        const reply = await call(alice, {
          method,
          url: '/api/admin/users/alice/budget',
          body: method === 'PUT' ? { monthlyBudgetUsd: 1 } : undefined,
        });
        expect(reply.status).toBe(403);
      },
    })),
    {
      method: 'DELETE',
      path: '/api/conversations/:id',
      access: 'user',
      probes: [(id) => ({ method: 'DELETE', url: `/api/conversations/${id}` })],
      unknownStatus: 404,
      sample: (a) => ({ method: 'DELETE', url: `/api/conversations/${a.juryConversation}` }),
      own: async (a) => {
        const url = `/api/conversations/${a.juryConversation}`;
        expect((await call(alice, { method: 'DELETE', url })).status).toBe(204);
        expect((await call(alice, { method: 'GET', url })).status).toBe(404);
      },
    },
    ...(
      [
        ['/api/modes', 200],
        ['/api/health', 200],
        ['/api/docs-json', 200],
        ['/api/docs-yaml', 200],
        ['/health/live', 200],
        ['/health/ready', 200],
        ['/metrics', 200],
      ] as const
    ).map(([path, status]): HttpEntry => ({
      method: 'GET',
      path,
      access: 'public',
      foreign: async (a) => {
        // Public: no key needed, and nothing in it names A's data.
        for (const token of [undefined, bob]) {
          const reply = await call(token, { method: 'GET', url: path });
          expect(reply.status).toBe(status);
          for (const id of idsOf(a)) expect(JSON.stringify(reply.body)).not.toContain(id);
        }
      },
      sample: () => ({ method: 'GET', url: path }),
      own: async () => expect((await call(alice, { method: 'GET', url: path })).status).toBe(status),
    })),
  ];

  /** The Swagger UI's own files: documentation assets, public, with no data in them. */
  const DOCS_ASSETS = /^GET \/api\/docs(\/|$)/;

  const SOCKET: SocketEntry[] = [
    {
      message: 'subscribe',
      probes: [
        (id) => ({ messageId: id }),
        (id) => ({ messageId: id, afterSeq: 0 }),
        (id) => ({ messageId: id, afterSeq: 3 }),
        (id) => ({ batchId: id }),
      ],
      unknownAck: (ack) => expect(ack).toEqual({ error: { message: expect.stringMatching(/not found$/) } }),
      own: async (a) => {
        const events = await completeOver(aliceSocket, a.juryMessage);
        expect(events.every((e) => e.messageId === a.juryMessage)).toBe(true);
        expect(await aliceSocket.emitWithAck('subscribe', { batchId: a.batchId })).toEqual({ ok: true });
      },
    },
    {
      message: 'deliberate',
      probes: [
        (id) => council('Socket intrusion', id),
        (id) => ({ question: 'Socket intrusion', mode: 'jury', modeConfig: JURY, conversationId: id }),
      ],
      unknownAck: (ack) =>
        expect(ack).toEqual({ error: { message: expect.stringMatching(/^conversation .* not found$/) } }),
      own: async (a) => {
        const ack = (await aliceSocket.emitWithAck(
          'deliberate',
          council('Over the socket', a.councilConversation),
        )) as {
          conversationId: string;
          messageId: string;
        };
        expect(ack.conversationId).toBe(a.councilConversation);
        await completeOver(aliceSocket, ack.messageId);
      },
    },
    {
      message: 'cancel',
      probes: [(id) => ({ messageId: id })],
      unknownAck: (ack) =>
        expect(ack).toEqual({
          error: { message: expect.stringMatching(/^deliberation .* not found$/), statusCode: 404 },
        }),
      own: async (a) => {
        expect(await aliceSocket.emitWithAck('cancel', { messageId: a.juryMessage })).toEqual({
          error: { message: expect.stringMatching(/\(status: complete\)/), statusCode: 409 },
        });
      },
    },
    {
      message: 'unsubscribe',
      // Per-socket state: B's unsubscribe can only ever touch B's own subscriptions.
      probes: [(id) => ({ messageId: id }), (id) => ({ batchId: id })],
      unknownAck: (ack) => expect(ack).toEqual({ ok: true }),
      own: async (a) => {
        expect(await aliceSocket.emitWithAck('unsubscribe', { batchId: a.batchId })).toEqual({ ok: true });
        expect(await aliceSocket.emitWithAck('unsubscribe', { messageId: a.juryMessage })).toEqual({
          ok: true,
        });
      },
    },
  ];

  beforeAll(async () => {
    await stack.start();
    [alice, bob, revoked] = await Promise.all([
      stack.createUser('alice'),
      stack.createUser('bob'),
      stack.createUser('carol'),
    ]);
    await stack.db.query('UPDATE api_keys SET revoked_at = now() WHERE key_hash = $1', [hashApiKey(revoked)]);
    aliceSocket = await stack.connect(alice);
    watcher = await stack.connect(alice);
    watcher.onAny((name: string, event: { messageId?: string; batchId?: string }) =>
      watched.push({ name, event }),
    );

    const batch = await as<{ batchId: string }>(alice, {
      method: 'POST',
      url: '/api/batches',
      body: SLOW_BATCH,
      headers: { 'idempotency-key': 'alice-batch' },
    });
    expect(batch.status).toBe(202);
    batchAccepted = batch.body;
    fx.batchId = batch.body.batchId;
    expect(await watcher.emitWithAck('subscribe', { batchId: fx.batchId })).toEqual({ ok: true });

    const first = await as<{ conversationId: string; messageId: string }>(alice, {
      method: 'POST',
      url: '/api/deliberations',
      body: council('Private question'),
      headers: { 'idempotency-key': 'alice-deliberation' },
    });
    expect(first.status).toBe(202);
    firstAccepted = first.body;
    fx.councilConversation = first.body.conversationId;
    fx.councilMessage = first.body.messageId;
    const jury = await stack.deliberate({ question: 'Is it right?', mode: 'jury', modeConfig: JURY }, alice);
    fx.juryConversation = jury.conversationId;
    fx.juryMessage = jury.messageId;
    await Promise.all([
      completeOver(aliceSocket, fx.councilMessage),
      completeOver(aliceSocket, fx.juryMessage),
    ]);
    const followUp = await stack.deliberate(council('Private follow-up', fx.councilConversation), alice);
    expect(followUp.conversationId).toBe(fx.councilConversation);
    fx.followUpMessage = followUp.messageId;
    await completeOver(aliceSocket, fx.followUpMessage);

    const conversation = await as<{ messages: { id: string; role: string }[] }>(alice, {
      method: 'GET',
      url: `/api/conversations/${fx.councilConversation}`,
    });
    fx.userMessage = conversation.body.messages.find((m) => m.role === 'user')!.id;
    const [item]: { id: string; conversation_id: string }[] = await stack.db.query(
      `SELECT id, conversation_id FROM messages WHERE batch_id = $1 AND role = 'assistant' ORDER BY batch_index LIMIT 1`,
      [fx.batchId],
    );
    fx.itemMessage = item.id;
    fx.itemConversation = item.conversation_id;
    expect(await watcher.emitWithAck('subscribe', { messageId: fx.itemMessage })).toEqual({ ok: true });
  }, 40_000);
  afterAll(() => stack.stop());

  /** What A owns, as stored: compared before and after B's attempts. */
  const snapshot = async () =>
    (await stack.db.query(
      `SELECT c.id AS conversation, m.id AS message, m.role, m.status = 'cancelled' AS cancelled,
         (SELECT status FROM batches b WHERE b.id = m.batch_id) = 'cancelled' AS batch_cancelled
       FROM conversations c JOIN users u ON u.id = c.user_id JOIN messages m ON m.conversation_id = c.id
       WHERE u.name = 'alice' ORDER BY m.id`,
    )) as unknown[];

  it('covers every HTTP route and every Socket.IO message the gateway serves', async () => {
    const matrix = HTTP.map((e) => `${e.method} ${e.path}`).sort();
    expect(new Set(matrix).size).toBe(matrix.length);
    const served = expressRoutes(stack.app!)
      .filter((r) => !DOCS_ASSETS.test(r))
      .sort();
    expect(served).toEqual(matrix);
    const docs = await as<{ paths: Record<string, Record<string, unknown>> }>(alice, {
      method: 'GET',
      url: '/api/docs-json',
    });
    const documented = Object.entries(docs.body.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    expect(documented.length).toBeGreaterThan(5);
    for (const route of documented) expect(matrix).toContain(route);
    expect(socketMessages(stack.app!).sort()).toEqual(
      SOCKET.map((e) => `/deliberations ${e.message}`).sort(),
    );
  });

  it('answers B over HTTP for any of A’s ids exactly as for an unknown id, and changes nothing of A’s', async () => {
    const before = await snapshot();
    expect(before.length).toBeGreaterThan(8);
    for (const entry of HTTP) {
      for (const probe of entry.probes ?? []) await sameAsUnknown(probe, entry.unknownStatus!);
      await entry.foreign?.(fx);
    }
    expect(await snapshot()).toEqual(before);
    const batch = await as<BatchView>(alice, { method: 'GET', url: `/api/batches/${fx.batchId}` });
    expect(batch.body.cancelled).toBe(0);
    expect(batch.body.status).not.toBe('cancelled');
  });

  it('answers B over Socket.IO for any of A’s ids exactly as for an unknown id, and sends B nothing', async () => {
    const before = await snapshot();
    const socket = await stack.connect(bob);
    socket.onAny((name: string) => bobReceived.push(name));
    for (const entry of SOCKET) {
      for (const probe of entry.probes) {
        const random = randomUUID();
        const unknown = normalize(await socket.emitWithAck(entry.message, probe(random)), random);
        entry.unknownAck(unknown);
        for (const id of idsOf(fx)) {
          const ack: unknown = await socket.emitWithAck(entry.message, probe(id));
          expect({ message: entry.message, id, ack: normalize(ack, id) }).toEqual({
            message: entry.message,
            id,
            ack: unknown,
          });
        }
      }
    }
    expect(await snapshot()).toEqual(before);
    expect(bobReceived).toEqual([]);
  });

  it('lets A do all of it on its own ids (the positive control of every route and message)', async () => {
    const heardBefore = watched.length;
    for (const entry of HTTP.filter((e) => e.method === 'GET')) await entry.own(fx);
    for (const entry of SOCKET) await entry.own(fx);
    for (const entry of HTTP.filter((e) => e.method !== 'GET')) await entry.own(fx);
    // The cancel reached A's own watcher, which B's unsubscribe attempts left in place.
    const cancelHeard = () =>
      watched
        .slice(heardBefore)
        .some(
          (w) =>
            w.name === 'batch_progress' && w.event?.batchId === fx.batchId && w.event.status === 'cancelled',
        );
    for (const deadline = Date.now() + 5_000; !cancelHeard() && Date.now() < deadline;)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(cancelHeard()).toBe(true);
    expect(watched.filter((w) => w.name === 'error' && w.event?.messageId === fx.itemMessage)).toEqual([]);
    expect(bobReceived).toEqual([]);
  });

  it('answers 401 on every protected route without a key, with a malformed one or a revoked one', async () => {
    const keys: { label: string; token?: string; headers?: Record<string, string> }[] = [
      { label: 'none' },
      { label: 'revoked', token: revoked },
      { label: 'unknown', token: `ck_${randomUUID().replace(/-/g, '')}` },
      { label: 'malformed', token: 'not-a-key' },
      { label: 'bare prefix', token: 'ck_' },
      { label: 'oversized', token: `ck_${'x'.repeat(500)}` },
      {
        label: 'basic scheme',
        headers: { authorization: `Basic ${Buffer.from(`x:${bob}`).toString('base64')}` },
      },
      { label: 'empty bearer', headers: { authorization: 'Bearer ' } },
    ];
    const protectedRoutes = HTTP.filter((e) => e.access === 'user');
    expect(protectedRoutes.length).toBeGreaterThanOrEqual(11);
    let first: unknown;
    for (const entry of protectedRoutes) {
      const sample = entry.sample(fx);
      for (const via of ['header', 'query'] as const) {
        for (const key of keys) {
          const reply = await call(key.token, {
            ...sample,
            via,
            headers: { ...(sample.headers ?? {}), ...(key.headers ?? {}) },
          });
          expect({
            route: `${entry.method} ${entry.path}`,
            via,
            key: key.label,
            status: reply.status,
          }).toEqual({
            route: `${entry.method} ${entry.path}`,
            via,
            key: key.label,
            status: 401,
          });
          first ??= reply.body;
          expect(reply.body).toEqual(first);
        }
      }
      // A valid key as ?access_token= is for the SSE stream only.
      if (!entry.path.endsWith('/events'))
        expect((await call(bob, { ...sample, via: 'query' })).status).toBe(401);
    }
    for (const token of [undefined, revoked, 'not-a-key', `ck_${randomUUID()}`]) {
      await expect(stack.connect(token)).rejects.toThrow(/^unauthorized/);
    }
    // A key revoked while its socket is open stops working there at the next message.
    const erin = await stack.createUser('erin');
    const open = await stack.connect(erin);
    const closed = new Promise((resolve) => open.once('disconnect', resolve));
    expect(await open.emitWithAck('subscribe', { messageId: randomUUID() })).toEqual({
      error: { message: expect.stringMatching(/not found$/) },
    });
    await stack.db.query('UPDATE api_keys SET revoked_at = now() WHERE key_hash = $1', [hashApiKey(erin)]);
    expect(await open.emitWithAck('deliberate', council('Revoked already'))).toEqual({
      error: { message: expect.stringMatching(/^unauthorized/) },
    });
    await closed;
    expect((await call(erin, { method: 'GET', url: '/api/conversations' })).status).toBe(401);
    const [{ n }]: { n: number }[] = await stack.db.query(
      `SELECT count(*)::int AS n FROM conversations c JOIN users u ON u.id = c.user_id WHERE u.name = 'erin'`,
    );
    expect(n).toBe(0);
    // The queue dashboard: a key is needed, and an ordinary user's key is not enough.
    expect((await call(undefined, { method: 'GET', url: '/admin/queues' })).status).toBe(401);
    expect((await call(revoked, { method: 'GET', url: '/admin/queues' })).status).toBe(401);
    expect((await call(bob, { method: 'GET', url: '/admin/queues' })).status).toBe(403);
  });
});
