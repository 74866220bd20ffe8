import { hashTagOf, queuePrefixFor } from '@conclave/config';
import { STAGE_QUEUE_DEFINITION, liveChannel } from '@conclave/contracts';
import type { ProviderLimits } from '@conclave/llm';
import { QueueKeys } from 'bullmq';
import { fleetLimitPlan } from './fleet-limiter';

/**
 * A Redis Cluster runs a script (or MULTI) only when all the keys it names hash to one slot. These
 * are the keys Conclave's scripts name together; each set must share its hash tag.
 */
const oneSlot = (keys: string[]): boolean => new Set(keys.map(hashTagOf)).size === 1;

describe('keys on a Redis Cluster', () => {
  const PREFIXES = ['conclave', 'team-a:prod', '{conclave}', 'p:{y}:q'];

  it("BullMQ's keys of the stage queue share one slot under the cluster's queue prefix", () => {
    for (const prefix of PREFIXES) {
      const keys = new QueueKeys(queuePrefixFor(prefix, true)).getKeys(STAGE_QUEUE_DEFINITION.name);
      const all = [...Object.values(keys), `${keys['']}stage:m1:stage1`, `${keys['']}title:m1`];
      expect(oneSlot(all)).toBe(true);
    }
    // Without the tag they would not: the reason for queuePrefix.
    const plain = new QueueKeys('conclave').getKeys(STAGE_QUEUE_DEFINITION.name);
    expect(oneSlot(Object.values(plain))).toBe(false);
  });

  it('the fleet limiter names only keys of one slot per call, whatever the provider and model', () => {
    const limits: ProviderLimits = {
      providers: { openrouter: { maxConcurrent: 4, rpm: 100 }, 'openai-compatible': { rpm: 10 } },
      models: { 'openrouter/anthropic/claude-3.5:beta': { maxConcurrent: 1 }, 'local/x': { rpm: 5 } },
    };
    const scopes = [
      { provider: 'openrouter', model: 'openrouter/anthropic/claude-3.5:beta' },
      { provider: 'openrouter', model: 'openrouter/unlimited' },
      { provider: 'openai-compatible', model: 'local/x' },
      { provider: 'simulated' },
    ];
    for (const prefix of PREFIXES) {
      for (const scope of scopes) {
        const plan = fleetLimitPlan(prefix, limits, scope);
        expect(oneSlot(plan.keys)).toBe(true);
        expect(plan.concurrencyKeys.every((key) => plan.keys.includes(key))).toBe(true);
      }
      // Providers spread over the cluster unless the prefix pins everything to its own tag.
      const a = fleetLimitPlan(prefix, limits, scopes[0]).keys[0];
      const b = fleetLimitPlan(prefix, limits, scopes[2]).keys[0];
      expect(hashTagOf(a) === hashTagOf(b)).toBe(prefix.includes('{'));
    }
    // The key names on one Redis are what they always were.
    expect(fleetLimitPlan('conclave', limits, scopes[0])).toEqual({
      keys: [
        'conclave:limits:{openrouter}:cooldown',
        'conclave:limits:{openrouter}:concurrent',
        'conclave:limits:{openrouter}:rpm',
        'conclave:limits:{openrouter}:model:openrouter/anthropic/claude-3.5:beta:concurrent',
        'conclave:limits:{openrouter}:model:openrouter/anthropic/claude-3.5:beta:rpm',
      ],
      limits: [4, 100, 1, 0],
      concurrencyKeys: [
        'conclave:limits:{openrouter}:concurrent',
        'conclave:limits:{openrouter}:model:openrouter/anthropic/claude-3.5:beta:concurrent',
      ],
    });
  });

  it("each deliberation's live channel is a channel of its own (sharded over the cluster's slots)", () => {
    const channels = ['m1', 'm2', 'm3', 'm4'].map((id) => liveChannel('conclave', id));
    expect(channels[0]).toBe('conclave:live:m1');
    expect(new Set(channels.map(hashTagOf)).size).toBe(channels.length);
  });
});
