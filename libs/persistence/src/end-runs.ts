import type { DeliveredEvent } from '@conclave/contracts';
import { endingWrite, type DeliberationEnd } from '@conclave/deliberation';
import type { DataSource, EntityManager } from 'typeorm';
import { stageWriteParameter, stageWriteResult, type StageWriteAnswer } from './deliberation.store';

/** The deliberations to end: a query giving their ids as `id`, and its parameters ($1, $2, …). */
export interface RunSelection {
  sql: string;
  params: unknown[];
}

/**
 * endRun (libs/deliberation) for many deliberations in one statement: a batch's queued items, ended
 * by its cancel or its budget. Each selected message gets the same ending write, endingWrite(end),
 * through conclave_stage_write, the only writer of a deliberation: under its row lock, skipped when
 * it has ended meanwhile (a stop that held the row while this waited for it keeps its own end),
 * else its last event (`cancelled { reason }` or `error { message }`, seq after its last), its
 * status, error, no stage, completed_at, and its conversation's updated_at. Returns the events
 * stored, for the caller to publish once they are committed.
 */
export async function endRuns(
  manager: EntityManager | DataSource,
  selection: RunSelection,
  end: DeliberationEnd,
): Promise<DeliveredEvent[]> {
  const write = endingWrite(null, end);
  const n = selection.params.length + 1;
  // (`ended` names the statement for repositories.db-spec, which waits for it in pg_stat_activity.)
  const rows: { id: string; result: StageWriteAnswer }[] = await manager.query(
    `WITH ended AS (
       SELECT s.id, conclave_stage_write(s.id, $${n}::jsonb) AS result FROM (${selection.sql}) s)
     SELECT id, result FROM ended`,
    [...selection.params, stageWriteParameter(write)],
  );
  return rows.flatMap(({ id, result }) => {
    const written = stageWriteResult(id, write, result);
    return written.kind === 'written' ? written.events : [];
  });
}
