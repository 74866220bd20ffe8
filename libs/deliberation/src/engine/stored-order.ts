import type { StageRow } from './types';

/**
 * The order in which the store reads a message's stage rows back: stage order, then participant
 * (rows without one first), earlier rows before later ones (PostgreSQL's load and stage write:
 * `ORDER BY stage_order, participant NULLS FIRST, created_at, id`). Written here once, for what
 * has no database to ask: a stage's opening planned before its commit is sent (StageRun), the
 * dry-run estimate, the in-memory store.
 */
export function inStoredOrder(rows: StageRow[]): StageRow[] {
  return [...rows].sort(
    (a, b) => a.stageOrder - b.stageOrder || (a.participant ?? -1) - (b.participant ?? -1),
  );
}
