/**
 * Queue and job names are part of the stored state in Redis: never rename them casually,
 * queued jobs would be stranded.
 */
export const STAGE_QUEUE = 'deliberation-stages' as const;

export const JOB_NAMES = {
  stage: 'run-stage',
  title: 'generate-title',
} as const;

export interface StageJobData {
  messageId: string;
  stage: string;
}

export interface TitleJobData {
  messageId: string;
}

/** BullMQ job ids must not contain ':' nor be all digits. */
export const stageJobId = (messageId: string, stage: string): string => `${messageId}__${stage}`;
export const titleJobId = (messageId: string): string => `${messageId}__title`;
