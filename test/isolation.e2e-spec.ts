import { randomUUID } from 'node:crypto';
import type { BatchComparison, BatchReport, BatchView, DeliberationView } from '@conclave/contracts';
import { hashApiKey } from '@conclave/persistence';
import type { Socket } from 'socket.io-client';
import { TestStack } from './support/harness';
import { expressRoutes, MOUNTED_PATHS, socketMessages } from './support/routes';
import { sleep } from './support/wait';

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
  // Slow enough to be still running when the last route that needs it runs (its cancel), however
  // long a loaded machine takes over the routes before it.
  defaults: { mode: 'council', councilModels: ['sim/a:delay20000', 'sim/b'], chairmanModel: 'sim/c' },
  items: [{ question: 'Batch one?' }, { question: 'Batch two?' }, { question: 'Batch three?' }],
  concurrency: 1,
};
/** A batch that finishes at once: the one A deletes (the slow one stays for the other routes). */
const FINISHED_BATCH = {
  name: 'alice finished batch',
  defaults: { mode: 'council', councilModels: COUNCIL, chairmanModel: 'sim/c' },
  items: [{ question: 'Finished one?' }],
};

/** How an MCP client talks to /mcp (Streamable HTTP): JSON-RPC in, JSON or an SSE stream out. */
const MCP_PROTOCOL = '2025-06-18';
const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
const rpc = (method: string, params: Record<string, unknown>, id = 1) => ({
  jsonrpc: '2.0',
  id,
  method,
  params,
});
const INITIALIZE = rpc('initialize', {
  protocolVersion: MCP_PROTOCOL,
  capabilities: {},
  clientInfo: { name: 'isolation', version: '1.0.0' },
});
const transcriptUri = (id: string) => `conclave://deliberations/${id}`;
/** The MCP tools that take an id of the caller's (a messageId, or a conversationId to follow up): probed with A's. */
const MCP_ID_TOOLS = ['deliberate', 'start_deliberation', 'get_deliberation', 'cancel_deliberation'] as const;
/** The MCP tools that take no id: B's answers are checked to name nothing of A's (the /mcp row's foreign check). */
const MCP_NO_ID_TOOLS = ['list_modes', 'list_models'] as const;
/** The MCP resource templates: the transcript, probed by resources/read with A's ids. */
const MCP_TEMPLATES = ['deliberation-transcript'] as const;
/** A /v1 request of A's, and B's copy of it under A's Idempotency-Key. */
const V1_BODY = { model: 'conclave/council', messages: [{ role: 'user', content: 'Idempotent over /v1?' }] };

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
  /** A's preset's name: a UUID, so that every id route is probed with it too. */
  presetName: string;
  /** A's finished batch, deleted by A's own DELETE /api/batches/:id. */
  finishedBatchId: string;
  /** A's deliberation over /v1/chat/completions, started with an Idempotency-Key. */
  v1Message: string;
}

/** Every id A owns, of every kind: each id route is probed with all of them. */
const idsOf = (fx: Fixture): string[] => Object.values(fx);

interface Req {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * How the caller authenticates: the Authorization header; ?access_token= (refused everywhere);
   * for the SSE stream, a ticket the caller asks for that stream (`ticket`, EventSource's way) or one
   * issued for a deliberation of the caller's own, presented on the probed stream (`ownTicket`).
   */
  via?: 'header' | 'query' | 'ticket' | 'ownTicket';
}

interface Reply {
  status: number;
  type: string | null;
  body: unknown;
  /** The WWW-Authenticate header (MCP clients look for `Bearer` on a 401). */
  challenge: string | null;
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

/** The JSON-RPC messages of an /mcp reply: one JSON body, or the `data:` lines of an SSE stream. */
function rpcMessages(reply: Reply): Record<string, unknown>[] {
  if (typeof reply.body !== 'string') return reply.body ? [reply.body as Record<string, unknown>] : [];
  if (!reply.type?.includes('text/event-stream')) return [JSON.parse(reply.body) as Record<string, unknown>];
  return reply.body
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
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
  /** B's requests, by transport (each compared with A's view or an unknown id's answer). */
  const probesSent = { http: 0, sse: 0, v1: 0, mcp: 0, socket: 0, admin: 0 };
  /** B's Mcp-Session-Id, from its initialize: sent back on every later request, as clients do. */
  let bobSession = '';
  /** A finished batch of B's own: compared with A's batches, it must not open them. */
  let bobBatchId = '';
  /** An admin (for the dashboard's sign-in sessions) and A's /v1 answer under its Idempotency-Key. */
  let root = '';

  const ownMessages = new Map<string, string>();
  /** A deliberation of the key's own user (started once), for tickets presented on other streams. */
  async function ownMessageOf(token: string | undefined): Promise<string> {
    if (!token) return randomUUID();
    if (!ownMessages.has(token))
      ownMessages.set(token, (await stack.deliberate(council('My own stream'), token)).messageId);
    return ownMessages.get(token)!;
  }

  async function call(token: string | undefined, req: Req): Promise<Reply> {
    const headers: Record<string, string> = { ...(req.headers ?? {}) };
    let url = req.url;
    if (token === bob) {
      const transport = url.startsWith('/mcp')
        ? 'mcp'
        : url.startsWith('/v1/')
          ? 'v1'
          : /\/events(\/ticket)?(\?|$)/.test(url)
            ? 'sse'
            : 'http';
      probesSent[transport] += 1;
    }
    if (req.via === 'ticket' || req.via === 'ownTicket') {
      const streamOf = req.via === 'ticket' ? /^\/api\/deliberations\/([^/?]+)\/events/.exec(url)?.[1] : null;
      const issued = await call(token, {
        method: 'POST',
        url: `/api/deliberations/${streamOf ?? (await ownMessageOf(token))}/events/ticket`,
        headers,
      });
      if (issued.status !== 200) return issued;
      url += `${url.includes('?') ? '&' : '?'}ticket=${(issued.body as { ticket: string }).ticket}`;
    } else if (token && req.via === 'query') url += `${url.includes('?') ? '&' : '?'}access_token=${token}`;
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
    return {
      status: response.status,
      type: response.headers.get('content-type'),
      body,
      challenge: response.headers.get('www-authenticate'),
    };
  }

  /** A JSON-RPC message POSTed to /mcp in a session (after its initialize), as an MCP client sends it. */
  const mcpReq = (message: unknown, session: string): Req => ({
    method: 'POST',
    url: '/mcp',
    body: message,
    headers: { ...MCP_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': MCP_PROTOCOL },
  });

  /** The answer to one JSON-RPC request over /mcp (200, whatever the tool said). */
  async function mcpAnswer(
    token: string,
    message: ReturnType<typeof rpc>,
    session: string,
  ): Promise<Record<string, unknown>> {
    const reply = await call(token, mcpReq(message, session));
    expect(reply.status).toBe(200);
    const answer = rpcMessages(reply).find((m) => m.id === message.id);
    expect(answer).toBeDefined();
    return answer!;
  }

  /** An MCP client's first request: initialize; its answer names the server and hands out a session id. */
  async function mcpInitialize(token: string): Promise<string> {
    const response = await fetch(`${stack.baseUrl}/mcp`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
      body: JSON.stringify(INITIALIZE),
      signal: AbortSignal.timeout(10_000),
    });
    const reply: Reply = {
      status: response.status,
      type: response.headers.get('content-type'),
      body: await response.text(),
      challenge: null,
    };
    expect(reply.status).toBe(200);
    expect(rpcMessages(reply)).toEqual([
      expect.objectContaining({
        id: 1,
        result: expect.objectContaining({ serverInfo: expect.objectContaining({ name: 'conclave' }) }),
      }),
    ]);
    const session = response.headers.get('mcp-session-id');
    expect(session).toEqual(expect.any(String));
    return session!;
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
        (id) => ({ method: 'GET', url: `/api/deliberations/${id}/events`, via: 'ticket' }),
        (id) => ({ method: 'GET', url: `/api/deliberations/${id}/events?lastEventId=999`, via: 'ticket' }),
        (id) => ({ method: 'GET', url: `/api/deliberations/${id}/events?deltas=1`, via: 'ticket' }),
        (id) => ({
          method: 'GET',
          url: `/api/deliberations/${id}/events`,
          headers: { 'last-event-id': '1' },
        }),
      ],
      unknownStatus: 404,
      sample: (a) => ({ method: 'GET', url: `/api/deliberations/${a.councilMessage}/events`, via: 'ticket' }),
      foreign: async (a) => {
        // B's ticket for a stream of B's own opens no other stream: 401 for each of A's ids as for an unknown one.
        const probe = (id: string): Req => ({
          method: 'GET',
          url: `/api/deliberations/${id}/events`,
          via: 'ownTicket',
        });
        const random = randomUUID();
        const unknown = normalize(await call(bob, probe(random)), random) as Reply;
        expect(unknown.status).toBe(401);
        for (const id of idsOf(a)) expect(normalize(await call(bob, probe(id)), id)).toEqual(unknown);
      },
      own: async (a) => {
        // A completed deliberation replays its events, then the stream ends.
        const stream = await as<string>(alice, {
          method: 'GET',
          url: `/api/deliberations/${a.councilMessage}/events`,
          via: 'ticket',
        });
        expect(stream.status).toBe(200);
        expect(stream.type).toMatch(/text\/event-stream/);
        expect(stream.body).toContain(`"messageId":"${a.councilMessage}"`);
        expect(stream.body).toContain('event: complete');
        const done = await call(alice, {
          method: 'GET',
          url: `/api/deliberations/${a.councilMessage}/events?lastEventId=999`,
          via: 'ticket',
        });
        expect(done.status).toBe(204);
      },
    },
    {
      method: 'POST',
      path: '/api/deliberations/:messageId/events/ticket',
      access: 'user',
      probes: [(id) => ({ method: 'POST', url: `/api/deliberations/${id}/events/ticket` })],
      unknownStatus: 404,
      sample: (a) => ({ method: 'POST', url: `/api/deliberations/${a.councilMessage}/events/ticket` }),
      own: async (a) => {
        const issued = await as<{ ticket: string; expiresInSeconds: number }>(alice, {
          method: 'POST',
          url: `/api/deliberations/${a.councilMessage}/events/ticket`,
        });
        expect(issued.status).toBe(200);
        expect(issued.body).toEqual({ ticket: expect.stringMatching(/^cst_/), expiresInSeconds: 60 });
        const url = `/api/deliberations/${a.councilMessage}/events?ticket=${issued.body.ticket}`;
        const stream = await call(undefined, { method: 'GET', url });
        expect(stream.status).toBe(200);
        expect(stream.body).toContain('event: complete');
        // Single use.
        expect((await call(undefined, { method: 'GET', url })).status).toBe(401);
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
        (id) => ({ method: 'GET', url: `/api/batches/${id}/results?shape=long` }),
        (id) => ({ method: 'GET', url: `/api/batches/${id}/results?format=csv&shape=long` }),
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
        const long = await as<string>(alice, {
          method: 'GET',
          url: `/api/batches/${a.batchId}/results?shape=long`,
        });
        expect(long.status).toBe(200);
        const items = long.body
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { kind: string; messageId: string })
          .filter((r) => r.kind === 'item');
        expect(items).toHaveLength(3);
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
        // B's own batch beside one of A's: the pair answers as if A's were unknown.
        (id) => ({ method: 'GET', url: `/api/batches/compare?a=${bobBatchId}&b=${id}` }),
        (id) => ({ method: 'GET', url: `/api/batches/compare?a=${id}&b=${bobBatchId}&format=md` }),
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
        // A dry run of the same follow-ups reads the conversation too: as unknown, nothing priced.
        (id) => ({ method: 'POST', url: '/api/deliberations?dryRun=true', body: council('Let me in', id) }),
        (id) => ({
          method: 'POST',
          url: '/api/deliberations?dryRun=true',
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
        (id) => ({
          method: 'POST',
          url: '/api/batches?dryRun=true',
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
      method: 'DELETE',
      path: '/api/batches/:id',
      access: 'user',
      // B's delete of A's finished batch (or of its running one) deletes nothing: the snapshot, and below.
      probes: [(id) => ({ method: 'DELETE', url: `/api/batches/${id}` })],
      unknownStatus: 404,
      foreign: async (a) => {
        for (const id of [a.finishedBatchId, a.batchId]) {
          const got = await as<BatchView>(alice, { method: 'GET', url: `/api/batches/${id}` });
          expect(got).toMatchObject({ status: 200, body: { batchId: id, total: id === a.batchId ? 3 : 1 } });
        }
        // The finished batch's item is still there, answer and all (one JSONL line, parsed as JSON).
        const items = await call(alice, { method: 'GET', url: `/api/batches/${a.finishedBatchId}/results` });
        expect(items).toMatchObject({ status: 200, body: { status: 'complete', question: 'Finished one?' } });
      },
      sample: (a) => ({ method: 'DELETE', url: `/api/batches/${a.finishedBatchId}` }),
      own: async (a) => {
        // A's running batch is A's: refused with how to stop it (409), not hidden (404).
        const refused = await as<{ message: string }>(alice, {
          method: 'DELETE',
          url: `/api/batches/${a.batchId}`,
        });
        expect(refused.status).toBe(409);
        expect(refused.body.message).toMatch(/ is (queued|running): cancel it first/);
        expect((await call(alice, { method: 'GET', url: `/api/batches/${a.batchId}` })).status).toBe(200);
        const url = `/api/batches/${a.finishedBatchId}`;
        expect((await call(alice, { method: 'DELETE', url })).status).toBe(204);
        expect((await call(alice, { method: 'GET', url })).status).toBe(404);
        expect((await call(alice, { method: 'DELETE', url })).status).toBe(404);
        const list = await as<BatchView[]>(alice, { method: 'GET', url: '/api/batches' });
        expect(list.body.map((b) => b.batchId)).toEqual([a.batchId]);
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
      method: 'POST',
      path: '/api/admin/users/:name/cancel-work',
      access: 'user',
      // Neither is an admin: 403 whatever the name, and nothing of anyone's is cancelled.
      probes: [(id) => ({ method: 'POST', url: `/api/admin/users/${id}/cancel-work` })],
      unknownStatus: 403,
      sample: () => ({ method: 'POST', url: '/api/admin/users/alice/cancel-work' }),
      own: async () => {
        const reply = await call(alice, { method: 'POST', url: '/api/admin/users/alice/cancel-work' });
        expect(reply.status).toBe(403);
      },
    },
    {
      method: 'GET',
      path: '/v1/models',
      access: 'user',
      foreign: async (a) => {
        // B's models are the modes and B's own presets: nothing of A's.
        const reply = await as<{ data: { id: string }[] }>(bob, { method: 'GET', url: '/v1/models' });
        expect(reply.status).toBe(200);
        expect(reply.body.data.map((m) => m.id)).toContain('conclave/council');
        for (const id of idsOf(a)) expect(JSON.stringify(reply.body)).not.toContain(id);
      },
      sample: () => ({ method: 'GET', url: '/v1/models' }),
      own: async (a) => {
        const reply = await as<{ data: { id: string }[] }>(alice, { method: 'GET', url: '/v1/models' });
        expect(reply.body.data.map((m) => m.id)).toContain(`conclave/preset/${a.presetName}`);
      },
    },
    {
      method: 'POST',
      path: '/v1/chat/completions',
      access: 'user',
      // A's preset as B's model answers as a model nobody has.
      probes: [
        (id) => ({
          method: 'POST',
          url: '/v1/chat/completions',
          body: { model: `conclave/preset/${id}`, messages: [{ role: 'user', content: 'Whose preset?' }] },
        }),
      ],
      unknownStatus: 400,
      foreign: async (a) => {
        // Idempotency keys are per user: B's request under A's key and body is a deliberation of B's own.
        const reply = await as<{ conclave: { messageId: string } }>(bob, {
          method: 'POST',
          url: '/v1/chat/completions',
          body: V1_BODY,
          headers: { 'idempotency-key': 'alice-v1' },
        });
        expect(reply.status).toBe(200);
        expect(reply.body.conclave.messageId).toEqual(expect.any(String));
        for (const id of idsOf(a)) expect(JSON.stringify(reply.body)).not.toContain(id);
      },
      sample: () => ({
        method: 'POST',
        url: '/v1/chat/completions',
        body: { model: 'conclave/council', messages: [{ role: 'user', content: 'Sample?' }] },
      }),
      own: async (a) => {
        const reply = await as<{ choices: { message: { content: string } }[]; conclave: { preset: string } }>(
          alice,
          {
            method: 'POST',
            url: '/v1/chat/completions',
            body: {
              model: `conclave/preset/${a.presetName}`,
              messages: [{ role: 'user', content: 'Mine?' }],
            },
          },
        );
        expect(reply.status).toBe(200);
        expect(reply.body.conclave.preset).toBe(a.presetName);
        expect(reply.body.choices[0].message.content).toEqual(expect.any(String));
        // A's retry under its own key reattaches to A's deliberation.
        const replay = await as<{ conclave: { messageId: string } }>(alice, {
          method: 'POST',
          url: '/v1/chat/completions',
          body: V1_BODY,
          headers: { 'idempotency-key': 'alice-v1' },
        });
        expect(replay.status).toBe(200);
        expect(replay.body.conclave.messageId).toBe(a.v1Message);
      },
    },
    {
      method: 'GET',
      path: '/api/presets',
      access: 'user',
      foreign: async () => {
        expect(await as<unknown[]>(bob, { method: 'GET', url: '/api/presets' })).toMatchObject({
          status: 200,
          body: [],
        });
      },
      sample: () => ({ method: 'GET', url: '/api/presets' }),
      own: async (a) => {
        const list = await as<{ name: string }[]>(alice, { method: 'GET', url: '/api/presets' });
        expect(list.body.map((p) => p.name)).toEqual([a.presetName]);
      },
    },
    {
      method: 'GET',
      path: '/api/presets/:name',
      access: 'user',
      probes: [(id) => ({ method: 'GET', url: `/api/presets/${id}` })],
      unknownStatus: 404,
      sample: (a) => ({ method: 'GET', url: `/api/presets/${a.presetName}` }),
      own: async (a) => {
        const got = await as<{ mode: string }>(alice, { method: 'GET', url: `/api/presets/${a.presetName}` });
        expect(got).toMatchObject({ status: 200, body: { mode: 'council', councilModels: COUNCIL } });
      },
    },
    {
      method: 'POST',
      path: '/api/presets',
      access: 'user',
      probes: [(id) => ({ method: 'POST', url: '/api/presets', body: { name: id, mode: 'parliament' } })],
      unknownStatus: 400,
      foreign: async (a) => {
        // B cannot start from A's preset: its name answers as a name nobody has.
        const use = (preset: string) =>
          call(bob, { method: 'POST', url: '/api/deliberations', body: { question: 'Mine?', preset } });
        const random = randomUUID();
        const unknown = normalize(await use(random), random) as Reply;
        expect(unknown.status).toBe(400);
        expect(normalize(await use(a.presetName), a.presetName)).toEqual(unknown);
        // B's save under A's name is B's own new preset (201, not a replacement); A's stays as it was.
        const saved = await call(bob, {
          method: 'POST',
          url: '/api/presets',
          body: { name: a.presetName, mode: 'vote' },
        });
        expect(saved.status).toBe(201);
        const [row]: { mode: string }[] = await stack.db.query(
          `SELECT p.mode FROM presets p JOIN users u ON u.id = p.user_id WHERE u.name = 'alice' AND p.name = $1`,
          [a.presetName],
        );
        expect(row).toEqual({ mode: 'council' });
        expect((await call(bob, { method: 'DELETE', url: `/api/presets/${a.presetName}` })).status).toBe(204);
      },
      sample: () => ({ method: 'POST', url: '/api/presets', body: { name: 'sample' } }),
      own: async (a) => {
        const replaced = await call(alice, {
          method: 'POST',
          url: '/api/presets',
          body: { name: a.presetName, councilModels: COUNCIL },
        });
        expect(replaced.status).toBe(200);
      },
    },
    {
      method: 'DELETE',
      path: '/api/presets/:name',
      access: 'user',
      probes: [(id) => ({ method: 'DELETE', url: `/api/presets/${id}` })],
      unknownStatus: 404,
      sample: (a) => ({ method: 'DELETE', url: `/api/presets/${a.presetName}` }),
      own: async (a) => {
        const url = `/api/presets/${a.presetName}`;
        expect((await call(alice, { method: 'DELETE', url })).status).toBe(204);
        expect((await call(alice, { method: 'GET', url })).status).toBe(404);
      },
    },
    {
      method: 'POST',
      path: '/mcp',
      access: 'user',
      // B's MCP tools and resource reads on A's ids, in B's own session, answer as for an id nobody has.
      probes: [
        ...(['get_deliberation', 'cancel_deliberation'] as const).map(
          (name) => (id: string) =>
            mcpReq(rpc('tools/call', { name, arguments: { messageId: id } }), bobSession),
        ),
        // Waiting on A's running batch item waits for nothing: answered at once, as for an unknown id.
        (id) =>
          mcpReq(
            rpc('tools/call', { name: 'get_deliberation', arguments: { messageId: id, waitSeconds: 2 } }),
            bobSession,
          ),
        (id) => mcpReq(rpc('resources/read', { uri: transcriptUri(id) }), bobSession),
        // A council follow-up to anything of A's, or a jury one (mode mismatch): an unknown conversation.
        ...(['start_deliberation', 'deliberate'] as const).map(
          (name) => (id: string) =>
            mcpReq(rpc('tools/call', { name, arguments: council('Let me in', id) }), bobSession),
        ),
        (id) =>
          mcpReq(
            rpc('tools/call', {
              name: 'deliberate',
              arguments: { ...council('Let me in', id), waitSeconds: 1 },
            }),
            bobSession,
          ),
        (id) =>
          mcpReq(
            rpc('tools/call', {
              name: 'start_deliberation',
              arguments: { question: 'Let me in', mode: 'jury', modeConfig: JURY, conversationId: id },
            }),
            bobSession,
          ),
      ],
      unknownStatus: 200,
      foreign: async (a) => {
        // What B gets is "no deliberation" (a tool error) and "resource not found" (-32002), nothing of A's.
        for (const id of [randomUUID(), a.councilMessage, a.juryMessage, a.itemMessage]) {
          for (const name of ['get_deliberation', 'cancel_deliberation']) {
            const answer = await mcpAnswer(
              bob,
              rpc('tools/call', { name, arguments: { messageId: id } }),
              bobSession,
            );
            expect({ name, answer }).toEqual({
              name,
              answer: {
                jsonrpc: '2.0',
                id: 1,
                result: {
                  isError: true,
                  content: [{ type: 'text', text: expect.stringMatching(`^no deliberation ${id}:`) }],
                },
              },
            });
          }
          const read = await mcpAnswer(bob, rpc('resources/read', { uri: transcriptUri(id) }), bobSession);
          expect(read).toMatchObject({ error: { code: -32002 } });
          expect(read.result).toBeUndefined();
        }
        const started = await mcpAnswer(
          bob,
          rpc('tools/call', {
            name: 'start_deliberation',
            arguments: council('Let me in', a.councilConversation),
          }),
          bobSession,
        );
        expect(started).toMatchObject({
          result: {
            isError: true,
            content: [{ type: 'text', text: expect.stringMatching(/^conversation .* not found/) }],
          },
        });
        // What takes no id names nothing of A's: B's transcript list, the modes, the models.
        for (const message of [
          rpc('resources/list', {}),
          rpc('resources/templates/list', {}),
          ...MCP_NO_ID_TOOLS.map((name) => rpc('tools/call', { name, arguments: {} })),
        ]) {
          const answer = await mcpAnswer(bob, message, bobSession);
          expect(answer.result).toBeDefined();
          for (const id of idsOf(a)) expect(JSON.stringify(answer)).not.toContain(id);
        }
      },
      sample: () => ({ method: 'POST', url: '/mcp', body: INITIALIZE, headers: MCP_HEADERS }),
      own: async (a) => {
        // A new session (initialize), then A's tools and transcripts on A's own ids.
        const session = await mcpInitialize(alice);
        for (const id of [a.councilMessage, a.juryMessage, a.itemMessage]) {
          const got = await mcpAnswer(
            alice,
            rpc('tools/call', { name: 'get_deliberation', arguments: { messageId: id } }),
            session,
          );
          expect(got).toMatchObject({ result: { structuredContent: { messageId: id } } });
          expect((got.result as { isError?: boolean }).isError).toBeFalsy();
        }
        const cancelled = await mcpAnswer(
          alice,
          rpc('tools/call', { name: 'cancel_deliberation', arguments: { messageId: a.councilMessage } }),
          session,
        );
        expect(cancelled).toMatchObject({
          result: { structuredContent: { messageId: a.councilMessage, status: 'complete' } },
        });
        expect((cancelled.result as { isError?: boolean }).isError).toBeFalsy();
        const read = await mcpAnswer(
          alice,
          rpc('resources/read', { uri: transcriptUri(a.councilMessage) }),
          session,
        );
        expect(read).toMatchObject({
          result: {
            contents: [
              { uri: transcriptUri(a.councilMessage), text: expect.stringContaining('Private question') },
            ],
          },
        });
        const listed = await mcpAnswer(alice, rpc('resources/list', {}), session);
        expect(JSON.stringify(listed)).toContain(transcriptUri(a.councilMessage));
        const waited = await mcpAnswer(
          alice,
          rpc('tools/call', {
            name: 'get_deliberation',
            arguments: { messageId: a.councilMessage, waitSeconds: 2 },
          }),
          session,
        );
        expect(waited).toMatchObject({ result: { structuredContent: { messageId: a.councilMessage } } });
        const started = await mcpAnswer(
          alice,
          rpc('tools/call', {
            name: 'start_deliberation',
            arguments: council('Over MCP', a.councilConversation),
          }),
          session,
        );
        const { structuredContent } = started.result as {
          structuredContent: { conversationId: string; messageId: string };
        };
        expect(structuredContent.conversationId).toBe(a.councilConversation);
        await completeOver(aliceSocket, structuredContent.messageId);
      },
    },
    // Stateless: no stream to GET, no session to DELETE (405 whoever asks, with nothing in it).
    ...(['GET', 'DELETE'] as const).map((method): HttpEntry => ({
      method,
      path: '/mcp',
      access: 'public',
      foreign: async (a) => {
        for (const token of [undefined, bob]) {
          const reply = await call(token, { method, url: '/mcp', headers: MCP_HEADERS });
          expect(reply.status).toBe(405);
          for (const id of idsOf(a)) expect(JSON.stringify(reply.body)).not.toContain(id);
        }
      },
      sample: () => ({ method, url: '/mcp' }),
      own: async () =>
        expect((await call(alice, { method, url: '/mcp', headers: MCP_HEADERS })).status).toBe(405),
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
        (id) => ({ messageId: id, deltas: true }),
        (id) => ({ batchId: id }),
      ],
      unknownAck: (ack) =>
        expect(ack).toEqual({ error: { message: expect.stringMatching(/not found$/), statusCode: 404 } }),
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
        expect(ack).toEqual({
          error: { message: expect.stringMatching(/^conversation .* not found$/), statusCode: 404 },
        }),
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
    const finished = await as<{ batchId: string }>(alice, {
      method: 'POST',
      url: '/api/batches',
      body: FINISHED_BATCH,
    });
    expect(finished.status).toBe(202);
    fx.finishedBatchId = finished.body.batchId;

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
    fx.presetName = randomUUID();
    const preset = await call(alice, {
      method: 'POST',
      url: '/api/presets',
      body: { name: fx.presetName, councilModels: COUNCIL },
    });
    expect(preset.status).toBe(201);
    for (let i = 0; ; i++) {
      const view = await as<BatchView>(alice, { method: 'GET', url: `/api/batches/${fx.finishedBatchId}` });
      if (view.body.finishedAt !== null) {
        expect(view.body).toMatchObject({ status: 'complete', failed: 0 });
        break;
      }
      if (i >= 600) throw new Error(`batch ${fx.finishedBatchId} never finished`);
      await sleep(50);
    }
    const v1 = await as<{ conclave: { messageId: string } }>(alice, {
      method: 'POST',
      url: '/v1/chat/completions',
      body: V1_BODY,
      headers: { 'idempotency-key': 'alice-v1' },
    });
    expect(v1.status).toBe(200);
    fx.v1Message = v1.body.conclave.messageId;
    const bobBatch = await as<{ batchId: string }>(bob, {
      method: 'POST',
      url: '/api/batches',
      body: { ...FINISHED_BATCH, name: 'bob batch' },
    });
    expect(bobBatch.status).toBe(202);
    bobBatchId = bobBatch.body.batchId;
    for (let i = 0; ; i++) {
      const view = await as<BatchView>(bob, { method: 'GET', url: `/api/batches/${bobBatchId}` });
      if (view.body.finishedAt !== null) break;
      if (i >= 600) throw new Error(`batch ${bobBatchId} never finished`);
      await sleep(50);
    }
    root = await stack.createUser('root', 'admin');
    bobSession = await mcpInitialize(bob);
  }, 60_000);
  afterAll(async () => {
    // The counts SECURITY.md quotes: B's requests with A's ids (or an unknown one), by transport.
    process.stdout.write(`isolation probes sent by B: ${JSON.stringify(probesSent)}\n`);
    await stack.stop();
  });

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
    // Every MCP tool and resource template the server lists is probed (or takes no id and is checked).
    const tools = await mcpAnswer(bob, rpc('tools/list', {}), bobSession);
    expect((tools.result as { tools: { name: string }[] }).tools.map((t) => t.name).sort()).toEqual(
      [...MCP_ID_TOOLS, ...MCP_NO_ID_TOOLS].sort(),
    );
    const mcpRow = HTTP.find((e) => e.method === 'POST' && e.path === '/mcp')!;
    const probedTools = mcpRow.probes!.map(
      (p) => (p(':id').body as { params: { name?: string } }).params.name,
    );
    expect([...new Set(probedTools.filter((n) => n !== undefined))].sort()).toEqual([...MCP_ID_TOOLS].sort());
    const templates = await mcpAnswer(bob, rpc('resources/templates/list', {}), bobSession);
    expect(
      (templates.result as { resourceTemplates: { name: string }[] }).resourceTemplates.map((t) => t.name),
    ).toEqual([...MCP_TEMPLATES]);
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
          probesSent.socket += 1;
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
    for (const deadline = Date.now() + 5_000; !cancelHeard() && Date.now() < deadline;) await sleep(50);
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
    // One 401 answer per surface: the API's own shape, OpenAI's under /v1, MCP's (with its Bearer challenge).
    const first = new Map<string, unknown>();
    const surfaceOf = (path: string) => (path.startsWith('/v1/') ? '/v1' : path === '/mcp' ? 'mcp' : 'api');
    expect(new Set(protectedRoutes.map((e) => surfaceOf(e.path)))).toEqual(new Set(['api', '/v1', 'mcp']));
    for (const entry of protectedRoutes) {
      const surface = surfaceOf(entry.path);
      const sample = entry.sample(fx);
      // EventSource's stream also takes a ticket: asking for one needs a valid key.
      const vias = entry.path.endsWith('/events') ? (['header', 'ticket'] as const) : (['header'] as const);
      for (const via of vias) {
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
          const answer = { body: reply.body, challenge: reply.challenge };
          if (surface === 'mcp') expect(answer.challenge).toMatch(/^Bearer\b/);
          if (!first.has(surface)) first.set(surface, answer);
          expect({ route: `${entry.method} ${entry.path}`, via, key: key.label, answer }).toEqual({
            route: `${entry.method} ${entry.path}`,
            via,
            key: key.label,
            answer: first.get(surface),
          });
        }
      }
      // No route takes a key in its URL: a valid one as ?access_token= is a 400 naming it.
      const inUrl = await call(bob, { ...sample, via: 'query' });
      expect({ route: `${entry.method} ${entry.path}`, status: inUrl.status, body: inUrl.body }).toEqual({
        route: `${entry.method} ${entry.path}`,
        status: 400,
        body: expect.objectContaining({ message: expect.stringContaining('access_token') }),
      });
    }
    for (const token of [undefined, revoked, 'not-a-key', `ck_${randomUUID()}`]) {
      await expect(stack.connect(token)).rejects.toThrow(/^unauthorized/);
    }
    // A key revoked while its socket is open stops working there at the next message.
    const erin = await stack.createUser('erin');
    const open = await stack.connect(erin);
    const closed = new Promise((resolve) => open.once('disconnect', resolve));
    expect(await open.emitWithAck('subscribe', { messageId: randomUUID() })).toEqual({
      error: { message: expect.stringMatching(/not found$/), statusCode: 404 },
    });
    await stack.db.query('UPDATE api_keys SET revoked_at = now() WHERE key_hash = $1', [hashApiKey(erin)]);
    expect(await open.emitWithAck('deliberate', council('Revoked already'))).toEqual({
      error: { message: expect.stringMatching(/^unauthorized/), statusCode: 401 },
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

  it('keeps the dashboard’s sign-in sessions to admins: no session for B, none from a key or a guess, none ended by B', async () => {
    const form = (key: string) => new URLSearchParams({ key }).toString();
    const admin = async (
      path: string,
      init: { method?: string; body?: string; cookie?: string; token?: string },
    ) => {
      const headers: Record<string, string> = { accept: 'application/json' };
      if (init.body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
      if (init.cookie !== undefined) headers.cookie = init.cookie;
      if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
      const response = await fetch(`${stack.baseUrl}${path}`, {
        method: init.method ?? 'GET',
        headers,
        body: init.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      });
      await response.text();
      probesSent.admin += 1;
      return { status: response.status, cookie: response.headers.get('set-cookie') };
    };
    const sessions = async () =>
      ((await stack.db.query('SELECT count(*)::int AS n FROM admin_sessions')) as { n: number }[])[0].n;
    const before = await sessions();
    // B (and A) are not admins: the sign-in form refuses their keys and opens no session.
    for (const key of [bob, alice]) {
      const refused = await admin('/admin/sign-in', { method: 'POST', body: form(key) });
      expect(refused).toEqual({ status: 403, cookie: null });
    }
    expect(await sessions()).toBe(before);
    // The admin's sign-in: a session token of its own, never the key.
    const signedIn = await admin('/admin/sign-in', { method: 'POST', body: form(root) });
    expect(signedIn.status).toBe(303);
    const token = /conclave_admin_session=(cas_[^;]+)/.exec(signedIn.cookie ?? '')?.[1];
    expect(token).toEqual(expect.any(String));
    expect(token).not.toContain(root);
    expect(await sessions()).toBe(before + 1);
    const cookie = `conclave_admin_session=${token}`;
    expect((await admin('/admin/queues', { cookie })).status).toBe(200);
    // Neither B's key, nor the admin's key, nor a guess is a session: 401 on the dashboard.
    for (const guess of [bob, root, `cas_${randomUUID().replace(/-/g, '')}`, `${token}x`, 'cas_']) {
      expect({
        guess,
        status: (await admin('/admin/queues', { cookie: `conclave_admin_session=${guess}` })).status,
      }).toEqual({
        guess,
        status: 401,
      });
    }
    // B's key with the admin's session cookie is B: 403 (the key decides, the cookie adds nothing).
    expect((await admin('/admin/queues', { cookie, token: bob })).status).toBe(403);
    // B's sign-out (no session, or a guessed one) ends nobody's session.
    await admin('/admin/sign-out', { method: 'POST' });
    await admin('/admin/sign-out', { method: 'POST', cookie: `conclave_admin_session=cas_${randomUUID()}` });
    expect((await admin('/admin/queues', { cookie })).status).toBe(200);
    expect(await sessions()).toBe(before + 1);
    // Every path mounted outside Nest's router was probed above.
    expect([...MOUNTED_PATHS]).toEqual(['/admin/sign-in', '/admin/sign-out', '/admin/queues']);
  });
});
