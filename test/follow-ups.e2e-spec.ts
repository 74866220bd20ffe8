import { execFile } from 'node:child_process';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CouncilResult, DeliberationView } from '@conclave/contracts';
import { TestStack } from './support/harness';

/**
 * A follow-up keeps its panel on every interface: a turn that names only the conversation runs
 * with the roster and options of the conversation's last turn, not the operator's defaults
 * (sim/athena, sim/hermes, sim/apollo with sim/chairman in the harness).
 */

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'bin/conclave.js');
const PANEL = { councilModels: ['sim/iris', 'sim/janus'], chairmanModel: 'sim/vesta', timeoutMs: 45_000 };

interface StoredTurn {
  mode: string;
  config: { councilModels: string[]; chairmanModel: string; timeoutMs: number };
}

describe('follow-ups keep their panel (REST, Socket.IO, MCP, CLI, dry run, /v1)', () => {
  const stack = new TestStack();
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const turnOf = async (messageId: string): Promise<StoredTurn> => {
    const [row]: StoredTurn[] = await stack.db.query('SELECT mode, config FROM messages WHERE id = $1', [
      messageId,
    ]);
    return row;
  };

  /** A finished first turn with PANEL, to follow up on. */
  const conversation = async (): Promise<string> =>
    (await stack.run({ question: 'First question', mode: 'council', modeConfig: PANEL })).conversationId;

  it('REST: a turn with only question and conversationId runs with the last turn’s roster and options', async () => {
    const conversationId = await conversation();
    const second = await stack.run({ question: 'Second question', conversationId });
    expect((await turnOf(second.messageId)).config).toEqual(PANEL);
    const view = (
      await stack.api<DeliberationView<CouncilResult>>('GET', `/api/deliberations/${second.messageId}`)
    ).body;
    expect(view.status).toBe('complete');
    expect(view.result.stage1.map((r) => r.model)).toEqual(PANEL.councilModels);
    expect(view.result.stage3?.model).toBe(PANEL.chairmanModel);
    // A third turn follows the second, which itself kept the panel.
    const third = await stack.run({ question: 'Third question', conversationId });
    expect((await turnOf(third.messageId)).config).toEqual(PANEL);
  });

  it('REST: what the turn names replaces the conversation’s field by field', async () => {
    const conversationId = await conversation();
    const second = await stack.run({
      question: 'Second question',
      conversationId,
      councilModels: ['sim/x', 'sim/y'],
    });
    expect((await turnOf(second.messageId)).config).toEqual({ ...PANEL, councilModels: ['sim/x', 'sim/y'] });
    const third = await stack.run({
      question: 'Third question',
      conversationId,
      modeConfig: { timeoutMs: 20_000 },
    });
    expect((await turnOf(third.messageId)).config).toEqual({
      ...PANEL,
      councilModels: ['sim/x', 'sim/y'],
      timeoutMs: 20_000,
    });
  });

  it('REST: options carried over that no longer fit the turn’s new roster are left behind, never the roster', async () => {
    const first = await stack.run({
      question: 'First question',
      councilModels: ['sim/a', 'sim/b', 'sim/c'],
      chairmanModel: 'sim/chair',
      modeConfig: { quorum: 3, chairmanFallbacks: ['sim/spare'] },
    });
    // quorum 3 does not fit two members, and sim/spare cannot back itself up: neither was sent now.
    const second = await stack.run({
      question: 'Second question',
      conversationId: first.conversationId,
      councilModels: ['sim/x', 'sim/y'],
      chairmanModel: 'sim/spare',
    });
    const config = (await turnOf(second.messageId)).config as unknown as Record<string, unknown>;
    expect(config).toMatchObject({ councilModels: ['sim/x', 'sim/y'], chairmanModel: 'sim/spare' });
    expect(config.quorum).toBeUndefined();
    expect(config.chairmanFallbacks).toBeUndefined();
    // What the turn sends itself is still checked and named.
    const refused = await stack.api<{ fields: Record<string, string> }>('POST', '/api/deliberations', {
      body: {
        question: 'Third question',
        conversationId: first.conversationId,
        councilModels: ['sim/x', 'sim/y'],
        modeConfig: { quorum: 3 },
      },
    });
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.body.fields)).toEqual(['modeConfig.quorum']);
  });

  it('REST: a follow-up naming another mode is still refused, naming both modes', async () => {
    const conversationId = await conversation();
    const response = await stack.api<{ fields: Record<string, string> }>('POST', '/api/deliberations', {
      body: {
        question: 'Switch?',
        conversationId,
        mode: 'vote',
        modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] },
      },
    });
    expect(response.status).toBe(400);
    expect(response.body.fields.mode).toMatch(/council conversation.*cannot switch to vote/);
  });

  it('REST: a follow-up to a single-turn conversation names that mode, not council', async () => {
    const first = await stack.run({
      question: 'Name a prime.',
      mode: 'vote',
      modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] },
    });
    const response = await stack.api<{ fields: Record<string, string> }>('POST', '/api/deliberations', {
      body: { question: 'Another?', conversationId: first.conversationId },
    });
    expect(response.status).toBe(400);
    expect(response.body.fields.conversationId).toMatch(/vote is single-turn/);
  });

  it('dry run: the plan of a follow-up uses the conversation’s panel', async () => {
    const conversationId = await conversation();
    const response = await stack.api<{ calls: { model: string }[] }>(
      'POST',
      '/api/deliberations?dryRun=true',
      {
        body: { question: 'Second question', conversationId },
      },
    );
    expect(response.status).toBe(200);
    const models = new Set(JSON.stringify(response.body).match(/sim\/[a-z]+/g));
    expect(models).toEqual(new Set([...PANEL.councilModels, PANEL.chairmanModel]));
  });

  it('Socket.IO: deliberate with only conversationId keeps the panel', async () => {
    const conversationId = await conversation();
    const socket = await stack.connect();
    try {
      const accepted = (await socket.emitWithAck('deliberate', {
        question: 'Second question',
        conversationId,
      })) as { messageId: string; conversationId: string };
      expect(accepted.conversationId).toBe(conversationId);
      await stack.follow(accepted.messageId);
      expect((await turnOf(accepted.messageId)).config).toEqual(PANEL);
    } finally {
      socket.disconnect();
    }
  });

  it('MCP: start_deliberation with only conversationId keeps the panel', async () => {
    const conversationId = await conversation();
    const client = new Client({ name: 'follow-ups', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`)));
    try {
      const result = await client.callTool({
        name: 'start_deliberation',
        arguments: { question: 'Second question', conversationId },
      });
      expect(result.isError).toBeFalsy();
      const { messageId } = result.structuredContent as { messageId: string };
      await stack.follow(messageId);
      expect((await turnOf(messageId)).config).toEqual(PANEL);
    } finally {
      await client.close();
    }
  });

  it('CLI: conclave ask --conversation keeps the panel', async () => {
    const conversationId = await conversation();
    const env = { ...process.env };
    delete env.CONCLAVE_URL;
    delete env.CONCLAVE_API_KEY;
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [CLI, '--url', stack.baseUrl, 'ask', 'Second question', '--conversation', conversationId, '--json'],
        { cwd: ROOT, env, timeout: 30_000 },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect(run).toMatchObject({ code: 0 });
    const view = JSON.parse(run.stdout) as DeliberationView<CouncilResult>;
    expect(view.conversationId).toBe(conversationId);
    expect((await turnOf(view.messageId)).config).toEqual(PANEL);
  });

  it('/v1: every turn runs with the panel its model names (a preset), not the defaults', async () => {
    expect(
      (
        await stack.api('POST', '/api/presets', {
          body: { name: 'pair', mode: 'council', modeConfig: PANEL },
        })
      ).status,
    ).toBe(201);
    const chat = async (messages: { role: string; content: string }[]) => {
      const response = await stack.api<{
        conclave: { messageId: string };
        choices: { message: { content: string } }[];
      }>('POST', '/v1/chat/completions', { body: { model: 'conclave/preset/pair', messages } });
      expect(response.status).toBe(200);
      return response.body;
    };
    const first = await chat([{ role: 'user', content: 'First question' }]);
    const second = await chat([
      { role: 'user', content: 'First question' },
      { role: 'assistant', content: first.choices[0].message.content },
      { role: 'user', content: 'Second question' },
    ]);
    expect((await turnOf(first.conclave.messageId)).config).toEqual(PANEL);
    expect((await turnOf(second.conclave.messageId)).config).toEqual(PANEL);
  });
});
