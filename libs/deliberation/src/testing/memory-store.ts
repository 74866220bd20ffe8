import { isTerminalStatus, type DeliveredEvent } from '@conclave/contracts';
import { inStoredOrder } from '../engine/stored-order';
import type {
  CallOutcome,
  DeliberationStore,
  LoadedDeliberation,
  ModeEvent,
  StageRow,
  StageWrite,
  StageWriteResult,
  StoredStages,
  UnfinishedMessage,
} from '../engine/types';

/** The columns PostgreSQL's uq_deliberation_stages_once index makes a stage row unique by. */
const rowIdentity = (row: StageRow): string =>
  JSON.stringify([row.stageType, row.stageOrder, row.model ?? '', row.role ?? '', row.participant ?? -1]);

/**
 * The store port for one message, kept in memory, for engine tests. It follows the same contract
 * as the PostgreSQL store (test/store-contract.e2e-spec.ts runs the same spec against both), and
 * records what each write held (`writes`), so a test can count the engine's round trips.
 */
export class MemoryStore implements DeliberationStore {
  /** What each write held, in order, e.g. 'outcome+rows+events'. */
  writes: string[] = [];
  events: DeliveredEvent[] = [];
  rows: StageRow[] = [];
  outcomes: Record<string, CallOutcome[]> = {};
  /** The conversation's title. */
  title: string | null = null;
  state: LoadedDeliberation;
  private readonly eventKeys = new Set<string>();
  /** When each event was stored, by key (for a load's stageOpenedAt). */
  private readonly eventTimes = new Map<string, number>();

  constructor(question: string, config: unknown, initial: Partial<LoadedDeliberation> = {}) {
    this.state = {
      messageId: 'm1',
      conversationId: 'c1',
      mode: 'council',
      status: 'queued',
      stage: 'stage1',
      needsTitle: false,
      createdAt: new Date(),
      batchId: null,
      question,
      config,
      history: [],
      rows: [],
      outcomes: {},
      ...initial,
    };
  }

  private has(messageId: string): boolean {
    return messageId === this.state.messageId;
  }

  async load(messageId: string): Promise<LoadedDeliberation | null> {
    if (!this.has(messageId)) return null;
    return {
      ...this.state,
      stageOpenedAt: this.openedAt(this.state.stage) ?? this.state.stageOpenedAt ?? null,
      ...this.stored(),
    };
  }

  /** The rows and outcomes as a load reads them. */
  private stored(): Pick<LoadedDeliberation, 'rows' | 'outcomes'> {
    return { rows: structuredClone(inStoredOrder(this.rows)), outcomes: structuredClone(this.outcomes) };
  }

  /** What a write with `loaded` answers: the rows from the least stage order written, its stage's and the title's outcomes. */
  private storedBy(write: StageWrite): StoredStages {
    const orders = (write.rows ?? []).map((row) => row.stageOrder);
    const from = orders.length > 0 ? Math.min(...orders) : null;
    const { rows, outcomes } = this.stored();
    const written = Object.entries(outcomes).filter(([stage]) => stage === write.stage || stage === 'title');
    return {
      from,
      rows: from === null ? [] : rows.filter((row) => row.stageOrder >= from),
      outcomes: Object.fromEntries(written),
    };
  }

  /** When the stage's first `model_progress … started` event was stored, as PostgreSQL's load reads it. */
  private openedAt(stage: string | null): Date | null {
    if (stage === null) return null;
    const prefix = `model_progress:${stage}:`;
    let first: number | null = null;
    for (const [key, at] of this.eventTimes) {
      if (key.startsWith(prefix) && (first === null || at < first)) first = at;
    }
    return first === null ? null : new Date(first);
  }

  async loadOutcomes(messageId: string, stage: string): Promise<CallOutcome[]> {
    return this.has(messageId) ? structuredClone(this.outcomes[stage] ?? []) : [];
  }

  private append(events: ModeEvent[]): DeliveredEvent[] {
    const delivered: DeliveredEvent[] = [];
    for (const event of events) {
      if (this.eventKeys.has(event.key)) continue;
      this.eventKeys.add(event.key);
      this.eventTimes.set(event.key, Date.now());
      delivered.push({
        ...event.payload,
        type: event.type,
        messageId: this.state.messageId,
        seq: this.events.length + 1,
        at: new Date().toISOString(),
      });
      this.events.push(delivered[delivered.length - 1]);
    }
    return delivered;
  }

  /** What conclave_stage_write does, in its order. */
  async writeStage(messageId: string, write: StageWrite): Promise<StageWriteResult> {
    if (!this.has(messageId)) return { kind: 'missing' };
    const held: string[] = [];
    const record = <T>(result: T): T => {
      this.writes.push(held.join('+'));
      return result;
    };
    const stored = (this.outcomes[write.stage] ??= []);
    const given = write.outcomes ?? [];
    let replaced = false;
    for (const outcome of given) {
      held.push('outcome');
      if (stored.some((o) => o.key === outcome.key)) replaced = true;
      else stored.push(structuredClone(outcome));
    }
    if (replaced) {
      const outcomes = given.map((o) => structuredClone(stored.find((s) => s.key === o.key) as CallOutcome));
      return record({ kind: 'replaced', outcomes });
    }
    if (write.titleOutcome) {
      held.push('title call');
      const titles = (this.outcomes.title ??= []);
      if (titles.length === 0) titles.push(structuredClone(write.titleOutcome));
    }
    if (write.conversationTitle !== undefined && this.state.needsTitle) {
      held.push('title');
      this.title ??= write.conversationTitle;
    }
    if (isTerminalStatus(this.state.status) || (write.guard && this.state.stage !== write.stage)) {
      return record({ kind: 'skipped' });
    }
    const rows = (write.rows ?? []).filter(
      (row, i, all) =>
        !this.rows.some((r) => rowIdentity(r) === rowIdentity(row)) &&
        all.findIndex((r) => rowIdentity(r) === rowIdentity(row)) === i,
    );
    if (write.rows && write.rows.length > 0) held.push('rows');
    this.rows.push(...structuredClone(rows));
    let events = write.events;
    if (write.title !== undefined && this.state.needsTitle) {
      this.title ??= write.title;
      const title = this.title;
      events = events.map((e) =>
        e.type === 'title_complete' ? { ...e, payload: { ...e.payload, data: { title } } } : e,
      );
    } else {
      events = events.filter((e) => e.type !== 'title_complete');
    }
    if (events.length > 0) held.push('events');
    const delivered = this.append(events);
    const update = write.update;
    if (update?.status) this.state.status = update.status;
    else if (write.markRunning && this.state.status === 'queued') this.state.status = 'running';
    if (update?.stage !== undefined) this.state.stage = update.stage;
    return record({
      kind: 'written',
      events: delivered,
      ...(write.loaded ? { stored: this.storedBy(write) } : {}),
    });
  }

  async eventsAfter(messageId: string, afterSeq: number): Promise<DeliveredEvent[]> {
    return this.has(messageId) ? this.events.filter((e) => e.seq > afterSeq) : [];
  }

  async unfinishedMessages(): Promise<UnfinishedMessage[]> {
    return [];
  }
}
