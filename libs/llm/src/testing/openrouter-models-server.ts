import { createServer, IncomingHttpHeaders } from 'node:http';
import { AddressInfo, Socket } from 'node:net';

/**
 * A local stand-in for OpenRouter's models endpoint (`GET /api/v1/models`), for tests: no test
 * reaches the real one. It answers `{ data: [...] }` with OpenRouter's field names (per-token
 * prices as strings), or whatever a test scripts.
 */
export interface OpenRouterModel {
  id: string;
  name?: string;
  context_length?: number | null;
  pricing?: { prompt?: string; completion?: string; [field: string]: unknown };
  description?: string;
  [field: string]: unknown;
}

export type OpenRouterModelsBehaviour =
  | { kind: 'list'; models: OpenRouterModel[]; delayMs?: number }
  | { kind: 'http-error'; status: number; message?: string }
  /** Never answers (the client's timeout ends the request). */
  | { kind: 'hang' }
  | { kind: 'raw'; status: number; headers?: Record<string, string>; body: string };

export interface RecordedModelsCall {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  receivedAt: number;
}

export interface OpenRouterModelsServer {
  /** Ends in `/api/v1`, as OPENROUTER_BASE_URL does. */
  baseURL: string;
  /** Every request to `/api/v1/models`, in arrival order. */
  requests: RecordedModelsCall[];
  /** What the endpoint answers from now on; a function gets the request's 0-based index. */
  setBehaviour(behaviour: OpenRouterModelsBehaviour | ((index: number) => OpenRouterModelsBehaviour)): void;
  close(): Promise<void>;
}

/** A few entries shaped as OpenRouter writes them. */
export const SAMPLE_OPENROUTER_MODELS: readonly OpenRouterModel[] = [
  {
    id: 'openai/gpt-4o',
    name: 'OpenAI: GPT-4o',
    context_length: 128000,
    pricing: { prompt: '0.0000025', completion: '0.00001', request: '0', image: '0.003613' },
    description: 'GPT-4o ("o" for "omni") is OpenAI\'s latest AI model.',
    architecture: { modality: 'text+image->text' },
  },
  {
    id: 'anthropic/claude-3.5-haiku',
    name: 'Anthropic: Claude 3.5 Haiku',
    context_length: 200000,
    pricing: { prompt: '0.0000008', completion: '0.000004' },
    description: 'Claude 3.5 Haiku features offers enhanced capabilities in speed.',
  },
  {
    id: 'meta-llama/llama-3.1-8b-instruct:free',
    name: 'Meta: Llama 3.1 8B Instruct (free)',
    context_length: 131072,
    pricing: { prompt: '0', completion: '0' },
    description: 'Meta’s latest class of model.',
  },
  {
    id: 'openrouter/auto',
    name: 'Auto Router',
    context_length: 2000000,
    pricing: { prompt: '-1', completion: '-1' },
    description: 'Your prompt will be processed by a meta-model and routed to one of dozens of models.',
  },
];

const MODELS_PATH = '/api/v1/models';

export async function startOpenRouterModelsServer(
  initial: OpenRouterModelsBehaviour | ((index: number) => OpenRouterModelsBehaviour) = {
    kind: 'list',
    models: [...SAMPLE_OPENROUTER_MODELS],
  },
): Promise<OpenRouterModelsServer> {
  let behaviour = initial;
  const requests: RecordedModelsCall[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    req.resume();
    const json = (status: number, body: unknown): void => {
      if (res.destroyed) return;
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    };
    if (req.method !== 'GET' || path !== MODELS_PATH) {
      json(404, { error: { code: 404, message: `no route for ${req.method} ${path}` } });
      return;
    }
    const index = requests.length;
    requests.push({ method: req.method, path, headers: req.headers, receivedAt: Date.now() });
    const now = typeof behaviour === 'function' ? behaviour(index) : behaviour;
    switch (now.kind) {
      case 'list': {
        const send = (): void => json(200, { data: now.models });
        if (!now.delayMs) {
          send();
          return;
        }
        const timer = setTimeout(() => {
          timers.delete(timer);
          send();
        }, now.delayMs);
        timers.add(timer);
        return;
      }
      case 'http-error':
        json(now.status, {
          error: { code: now.status, message: now.message ?? `Scripted HTTP ${now.status}` },
        });
        return;
      case 'hang':
        return;
      case 'raw':
        res.writeHead(now.status, now.headers);
        res.end(now.body);
        return;
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}/api/v1`,
    requests,
    setBehaviour(next) {
      behaviour = next;
    },
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      return new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}
