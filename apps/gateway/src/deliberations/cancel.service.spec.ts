import type { INestApplicationContext } from '@nestjs/common';
import { isTerminalStatus, type MessageStatus } from '@conclave/contracts';
import type { StageWrite, StageWriteResult } from '@conclave/deliberation';
import {
  DeliberationsRepository,
  WorkStops,
  type BatchesRepository,
  type StoredMessage,
  type TypeOrmDeliberationStore,
} from '@conclave/persistence';
import { serviceContext } from '../../../../test/support/nest';
import { ApiError } from '../common/api-error';
import { CancelService, USER_CANCEL_REASON } from './cancel.service';
import { DeliberationsService } from './deliberations.service';

interface Row {
  userId: string;
  status: MessageStatus;
  stage: string | null;
  batchId: string | null;
  error: string | null;
}

/**
 * The messages table in memory, behind fakes of the repositories and the store the cancel goes
 * through. The store's write ends a message unless it has ended (as conclave_stage_write does);
 * `endFirst` makes a message end (another writer won) just before the cancel's write arrives.
 */
class FakeMessages {
  readonly rows = new Map<string, Row>();
  readonly writes: { messageId: string; write: StageWrite }[] = [];
  readonly closedBatches: string[] = [];
  endFirst: { messageId: string; status: MessageStatus } | null = null;

  add(id: string, row: Partial<Row> & { userId: string }): void {
    this.rows.set(id, { status: 'running', stage: 'stage1', batchId: null, error: null, ...row });
  }

  readonly deliberations: Partial<DeliberationsService> = {
    ownedMessage: async (userId, messageId) => {
      const row = this.rows.get(messageId);
      if (!row || row.userId !== userId) throw ApiError.notFound(`deliberation ${messageId}`);
      return { id: messageId, status: row.status, stage: row.stage, batchId: row.batchId } as StoredMessage;
    },
  };

  readonly repository: Partial<DeliberationsRepository> = {
    status: async (messageId) => this.rows.get(messageId)?.status ?? null,
  };

  readonly store: Partial<TypeOrmDeliberationStore> = {
    writeStage: async (messageId: string, write: StageWrite): Promise<StageWriteResult> => {
      if (this.endFirst?.messageId === messageId) {
        const row = this.rows.get(messageId);
        if (row) row.status = this.endFirst.status;
        this.endFirst = null;
      }
      this.writes.push({ messageId, write });
      const row = this.rows.get(messageId);
      if (!row) return { kind: 'missing' };
      if (isTerminalStatus(row.status)) return { kind: 'skipped' };
      row.status = write.update?.status ?? row.status;
      row.stage = write.update?.stage ?? null;
      row.error = write.update?.error ?? null;
      return { kind: 'written', events: [] };
    },
  };

  readonly batches: Partial<BatchesRepository> = {
    closeIfDone: async (batchId) => {
      this.closedBatches.push(batchId);
    },
  };
}

async function failure(call: Promise<unknown>): Promise<{ status: number; message: unknown }> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(error)}`);
  return { status: error.getStatus(), message: (error.getResponse() as { message: unknown }).message };
}

describe('CancelService (Nest context, WorkStops over fake repositories, no Redis)', () => {
  let context: INestApplicationContext;
  let messages: FakeMessages;
  let service: CancelService;

  beforeEach(async () => {
    messages = new FakeMessages();
    context = await serviceContext([
      CancelService,
      { provide: DeliberationsService, useValue: messages.deliberations },
      { provide: DeliberationsRepository, useValue: messages.repository },
      {
        provide: WorkStops,
        useFactory: () =>
          new WorkStops({
            store: messages.store as TypeOrmDeliberationStore,
            batches: messages.batches as BatchesRepository,
            openWork: {} as never,
            redis: null,
            warn: () => undefined,
          }),
      },
    ]);
    service = context.get(CancelService);
  });

  afterEach(() => context.close());

  it('ends a running deliberation as cancelled with the user’s reason, through the ending write', async () => {
    messages.add('m1', { userId: 'u1', stage: 'stage2' });
    await service.cancel('u1', 'm1');
    expect(messages.rows.get('m1')).toMatchObject({
      status: 'cancelled',
      stage: null,
      error: USER_CANCEL_REASON,
    });
    expect(messages.writes).toEqual([
      {
        messageId: 'm1',
        write: {
          stage: 'stage2',
          events: [{ key: 'cancelled', type: 'cancelled', payload: { reason: USER_CANCEL_REASON } }],
          update: { status: 'cancelled', stage: null, error: USER_CANCEL_REASON, completed: true },
        },
      },
    ]);
  });

  it('records a stop on the user’s behalf with its own reason, and moves a batch item’s batch on', async () => {
    messages.add('m2', { userId: 'u1', status: 'queued', batchId: 'b1' });
    await service.cancel('u1', 'm2', 'The key was revoked.');
    expect(messages.rows.get('m2')).toMatchObject({ status: 'cancelled', error: 'The key was revoked.' });
    expect(messages.closedBatches).toEqual(['b1']);
  });

  it('answers 404 for a deliberation that is not the user’s, and writes nothing', async () => {
    messages.add('m3', { userId: 'u1' });
    expect(await failure(service.cancel('u2', 'm3'))).toEqual({
      status: 404,
      message: 'deliberation m3 not found',
    });
    expect(messages.writes).toEqual([]);
    expect(messages.rows.get('m3')?.status).toBe('running');
  });

  it('answers 409 naming the status for one that has ended, without writing', async () => {
    messages.add('m4', { userId: 'u1', status: 'complete', stage: null });
    expect(await failure(service.cancel('u1', 'm4'))).toEqual({
      status: 409,
      message: 'This deliberation has already ended (status: complete); there is nothing to cancel.',
    });
    expect(messages.writes).toEqual([]);
  });

  it('lets an end that won the race stand: 409 with the status it ended with', async () => {
    messages.add('m5', { userId: 'u1' });
    messages.endFirst = { messageId: 'm5', status: 'failed' };
    expect(await failure(service.cancel('u1', 'm5'))).toEqual({
      status: 409,
      message: 'This deliberation has already ended (status: failed); there is nothing to cancel.',
    });
    expect(messages.rows.get('m5')).toMatchObject({ status: 'failed', error: null });
  });

  it('answers 404 when the deliberation was deleted before the write', async () => {
    messages.add('m6', { userId: 'u1' });
    const ownedMessage = messages.deliberations.ownedMessage!.bind(messages.deliberations);
    messages.deliberations.ownedMessage = async (userId, messageId) => {
      const message = await ownedMessage(userId, messageId);
      messages.rows.delete(messageId);
      return message;
    };
    expect(await failure(service.cancel('u1', 'm6'))).toEqual({
      status: 404,
      message: 'deliberation m6 not found',
    });
  });
});
