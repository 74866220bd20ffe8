import type { ResumedPayload, ResumeReason } from '@conclave/contracts';
import type { DeliberationStore, EventPublisher, ModeEvent, StageScheduler } from './types';

const SAID: Record<ResumeReason, (stage: string) => string> = {
  worker_lost: (stage) =>
    `The worker running ${stage} stopped; another worker is resuming it. Answers already received are kept.`,
  queue_lost: (stage) =>
    `The job queue lost this deliberation's place (Redis restarted empty); ${stage} is queued again. Answers already received are kept.`,
  stalled: (stage) => `${stage} had stopped moving; it is queued again. Answers already received are kept.`,
};

/**
 * The `resumed` extension event of a stage (ResumedPayload). `tag` tells resumptions of one stage
 * apart (the job's stall count, the queue's new epoch): the same fault announced twice, by two
 * workers or a retried write, is one stored event (event keys are unique per message).
 */
export function resumedEvent(stage: string, reason: ResumeReason, tag: string): ModeEvent {
  const payload: ResumedPayload = { stage, reason, message: SAID[reason](stage) };
  return { key: `resumed:${stage}:${reason}:${tag}`, type: 'resumed', payload: { ...payload } };
}

export interface ResumeOptions {
  /** Only deliberations whose row has not changed for this long (0: every unfinished one). */
  idleMs: number;
  reason: ResumeReason;
  /** See resumedEvent. */
  tag: string;
  /** True while a live worker runs a stage of the deliberation: its job was lost, its work was not. */
  running: (messageId: string, stage: string) => boolean | Promise<boolean>;
  /** A stage whose job failed for good: the deliberation is closed with an error. */
  failed: (messageId: string, stage: string) => Promise<void>;
}

/**
 * Puts interrupted work back on the queue, and says so to its subscribers. Nothing here makes a
 * model call: a stage queued again runs as any retried stage job does (job id per message and
 * stage, answers already stored reused, the commit guarded), so resuming twice costs nothing.
 */
export class Resumer {
  constructor(
    private readonly store: DeliberationStore,
    private readonly scheduler: StageScheduler,
    private readonly publisher: EventPublisher,
    private readonly log: (message: string) => void = () => undefined,
  ) {}

  /**
   * Stores and publishes the stage's `resumed` event; nothing when the deliberation has ended or
   * moved past the stage. Never rejects: the resumption does not depend on it.
   */
  async announce(messageId: string, stage: string, reason: ResumeReason, tag: string): Promise<boolean> {
    try {
      const written = await this.store.writeStage(messageId, {
        stage,
        guard: true,
        events: [resumedEvent(stage, reason, tag)],
      });
      if (written.kind !== 'written' || written.events.length === 0) return false;
      await this.publisher.publish(written.events).catch((error: unknown) => {
        this.log(`could not publish that ${messageId} resumes: ${String(error)}`);
      });
      return true;
    } catch (error) {
      this.log(`could not store that ${messageId} resumes: ${String(error)}`);
      return false;
    }
  }

  /**
   * Finds queued or running deliberations (idle for `idleMs`) whose stage has no job waiting or
   * running and that no live worker runs, announces each, then queues its stage again. Resolves
   * with how many it resumed or closed.
   */
  async resumeLost(options: ResumeOptions): Promise<number> {
    let repaired = 0;
    for (const { messageId, stage, batchId } of await this.store.unfinishedMessages(options.idleMs)) {
      if (await options.running(messageId, stage)) continue;
      const state = await this.scheduler.stageJobState(messageId, stage);
      if (state === 'pending') continue;
      repaired += 1;
      if (state === 'failed') {
        await options.failed(messageId, stage);
        continue;
      }
      // Said before the job exists, so that it precedes whatever the resumed stage writes.
      await this.announce(messageId, stage, options.reason, options.tag);
      await this.scheduler.rescheduleStage(messageId, stage, { background: batchId !== null });
    }
    return repaired;
  }
}
