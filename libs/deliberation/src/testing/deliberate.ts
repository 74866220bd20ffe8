import type { DeliveredEvent, Grading, ModeName } from '@conclave/contracts';
import { SimulatedProvider } from '@conclave/llm';
import { gradingFields } from '../engine/grade-rows';
import { StageRunner } from '../engine/stage-runner';
import type { ModeDefaults, ModeRegistry, StageWrite } from '../engine/types';
import { SIMULATED_FALLBACK, SIMULATED_RESPONDERS } from '../modes';
import { MemoryStore } from './memory-store';

/** Operator defaults for engine tests: simulated models only. */
export const TEST_DEFAULTS: ModeDefaults = {
  timeoutMs: 10_000,
  council: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/chair' },
  jury: { jurorModels: ['sim/a', 'sim/b', 'sim/c'], foremanModel: 'sim/f' },
  debate: { models: ['sim/a', 'sim/b', 'sim/c'] },
  delphi: { panelistModels: ['sim/a', 'sim/b', 'sim/c'], facilitatorModel: 'sim/f' },
  vote: { models: ['sim/a', 'sim/b', 'sim/c'] },
};

/**
 * Runs one deliberation of `mode` to its end in memory (simulated models, no delay): its first
 * stage, then each stage the runner enqueues, in turn. `writes` holds every stage write. With
 * `expected`, a graded item: every model call is told the expected answer (issue 37); with
 * `grading`, also its answers are graded and the grades stored with the rows (its expected
 * answer is the one the calls are told).
 */
export async function deliberateInMemory(
  registry: ModeRegistry,
  mode: ModeName,
  request: { question: string; modeConfig?: Record<string, unknown>; expected?: string; grading?: Grading },
) {
  const definition = registry(mode);
  if (!definition) throw new Error(`${mode} is not registered`);
  const resolved = definition.resolveConfig(request, TEST_DEFAULTS);
  if (!resolved.ok) throw new Error(JSON.stringify(resolved.fields));
  const store = new MemoryStore(request.question, resolved.config, {
    mode,
    stage: definition.firstStage,
    ...(request.expected !== undefined ? { expected: request.expected } : {}),
    ...gradingFields(request.grading),
  });
  const writes: StageWrite[] = [];
  const write = store.writeStage.bind(store);
  store.writeStage = async (messageId, stageWrite) => {
    writes.push(stageWrite);
    return write(messageId, stageWrite);
  };
  const enqueued: string[] = [];
  const published: DeliveredEvent[] = [];
  const provider = new SimulatedProvider({
    responders: SIMULATED_RESPONDERS,
    fallback: SIMULATED_FALLBACK,
    latencyMs: 0,
    seed: 'deliberate-in-memory',
  });
  const runner = new StageRunner(
    registry,
    store,
    provider,
    { publish: async (events) => void published.push(...events) },
    {
      enqueueStage: async (_id, stage) => void enqueued.push(stage),
      stageJobState: async () => 'pending',
      rescheduleStage: async () => undefined,
    },
    { historyTurns: 0, deliberationCapMs: 600_000 },
  );
  await runner.runStage(store.state.messageId, definition.firstStage);
  for (let i = 0; i < enqueued.length; i++) {
    await runner.runStage(store.state.messageId, enqueued[i], { firstStart: true });
  }
  return { store, writes, published, definition, stages: [definition.firstStage, ...enqueued] };
}
