import type { DeliberationView } from '@conclave/contracts';
import {
  chatCompletion,
  chunk,
  conclaveInfo,
  MODES_CREATED,
  modelList,
  usageChunk,
  usageOf,
  type ChunkBase,
} from './completions';

const view: DeliberationView = {
  messageId: 'm-1',
  conversationId: 'c-1',
  mode: 'council',
  status: 'complete',
  error: null,
  createdAt: '2026-01-02T03:04:05.000Z',
  completedAt: '2026-01-02T03:04:15.000Z',
  simulated: true,
  usage: { promptTokens: 120, completionTokens: 30, costUsd: 0.002 },
  calls: [
    {
      stage: 'stage1',
      model: 'sim/a',
      ok: false,
      error: 'timed out',
      finishReason: null,
      truncated: false,
      responseTimeMs: 10,
      promptTokens: null,
      completionTokens: null,
      costUsd: null,
    },
  ],
  result: {},
  partial: null,
  degraded: null,
};
const earlierTurns = { given: 0, passedToPanel: 0, unpaired: 0, systemMessages: 0 };

describe('completion shapes', () => {
  it('lists the modes, then the presets, as OpenAI models', () => {
    expect(
      modelList(
        ['council', 'vote'],
        [{ name: 'trio', mode: 'vote', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '' }],
      ),
    ).toEqual({
      object: 'list',
      data: [
        { id: 'conclave/council', object: 'model', created: MODES_CREATED, owned_by: 'conclave' },
        { id: 'conclave/vote', object: 'model', created: MODES_CREATED, owned_by: 'conclave' },
        { id: 'conclave/preset/trio', object: 'model', created: 1767225600, owned_by: 'conclave' },
      ],
    });
  });

  it('sums usage as OpenAI counts it', () => {
    expect(usageOf({ promptTokens: 10, completionTokens: 5, costUsd: 1 })).toEqual({
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
    });
  });

  it('answers a chat.completion with the final text and the conclave field', () => {
    const conclave = conclaveInfo(view, { preset: null, base: 'http://localhost:3000', earlierTurns });
    expect(conclave).toMatchObject({
      messageId: 'm-1',
      url: 'http://localhost:3000/#/m/m-1',
      partial: true,
      failedCalls: [{ stage: 'stage1', model: 'sim/a', error: 'timed out' }],
      costUsd: 0.002,
    });
    expect(chatCompletion(view, 'conclave/council', 'Final.', 'Stage 1\n', conclave)).toEqual({
      id: 'chatcmpl-m-1',
      object: 'chat.completion',
      created: 1767323045,
      model: 'conclave/council',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Final.', refusal: null, reasoning_content: 'Stage 1\n' },
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 },
      system_fingerprint: null,
      conclave,
    });
  });

  it('shapes chunks: usage null on each with include_usage, the usage last without choices', () => {
    const base: ChunkBase = { id: 'chatcmpl-m-1', created: 5, model: 'conclave/vote', includeUsage: true };
    expect(chunk(base, { content: 'Hi' })).toEqual({
      id: 'chatcmpl-m-1',
      object: 'chat.completion.chunk',
      created: 5,
      model: 'conclave/vote',
      system_fingerprint: null,
      choices: [{ index: 0, delta: { content: 'Hi' }, logprobs: null, finish_reason: null }],
      usage: null,
    });
    expect(chunk({ ...base, includeUsage: false }, { reasoning_content: 'x' })).not.toHaveProperty('usage');
    const conclave = conclaveInfo(view, { preset: 'p', base: null, earlierTurns });
    expect(chunk(base, {}, { reason: 'stop', conclave })).toMatchObject({
      choices: [{ delta: {}, finish_reason: 'stop' }],
      conclave: { preset: 'p', url: null },
    });
    expect(usageChunk(base, view.usage)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 },
    });
  });
});
