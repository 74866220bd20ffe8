interface Pending<Item, Result> {
  key: string;
  item: Item;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

export interface GroupedWritesOptions {
  /** How many groups may be in the database at once; writes that come meanwhile wait and go together. */
  maxInFlight: number;
  /** The most writes one group carries. */
  maxGroup: number;
  /**
   * Whether a group that failed with `error` did nothing, so its writes can be made again one by
   * one: true for an error the database answered (the statement was rolled back). Anything else (a
   * connection lost while the group was in the database, when it may have committed) fails every
   * write of the group with it, as a single write's would. Default: never.
   */
  rolledBack?: (error: unknown) => boolean;
  /** Hears each group the database refused (its writes then go one by one): for the operator's log. */
  onRefused?: (error: unknown) => void;
}

/**
 * Group commit across keys (a key is a deliberation): writes submitted while `maxInFlight` groups
 * are in the database (or in the same turn of the event loop) go together in the next group, one
 * statement and one commit instead of one each. When the database keeps up, every write goes at
 * once on its own, so grouping costs nothing at low load; it grows only with the queue.
 *
 * Per key, writes stay in the order submitted and never overlap: a key's next write waits for its
 * previous one to answer, and a group holds at most one write per key. A group's writes are sorted
 * by key, so two groups take their rows' locks in the same order. If the database refuses a group
 * (rolledBack), its writes are made again one by one: each answers (or fails) on its own, as if it
 * had never been grouped.
 *
 * The price: a group holds its rows' locks until its commit, so a write behind another writer's
 * lock (a stop, a batch's cancel) holds up the rest of its group while it waits. The database bounds
 * each such wait (conclave_stage_write_group's lock_timeout); past it the group is refused and its
 * writes go one by one, each key free again as soon as its own write answers. Statements that lock
 * several messages take them in id order too (removeConversations, a batch's retry). A deadlock
 * is still possible through rows locked later in a write (a conversation's); PostgreSQL then
 * refuses one side, and if that is a group its writes go again one by one.
 */
export class GroupedWrites<Item, Result> {
  private pending: Pending<Item, Result>[] = [];
  private readonly busy = new Set<string>();
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly writeGroup: (items: Item[]) => Promise<Result[]>,
    private readonly writeOne: (item: Item) => Promise<Result>,
    private readonly options: GroupedWritesOptions,
  ) {
    if (!(options.maxInFlight >= 1) || !(options.maxGroup >= 1)) {
      throw new Error('GroupedWrites needs maxInFlight ≥ 1 and maxGroup ≥ 1');
    }
  }

  submit(key: string, item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.pending.push({ key, item, resolve, reject });
      this.schedule();
    });
  }

  /** Starts what can start, on the next turn: writes submitted by this turn's other callbacks join. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight || this.pending.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.startGroups();
    });
  }

  private startGroups(): void {
    while (this.inFlight < this.options.maxInFlight) {
      const group = this.take();
      if (group.length === 0) return;
      this.inFlight += 1;
      let released = false;
      const releaseSlot = () => {
        if (released) return;
        released = true;
        this.inFlight -= 1;
        this.schedule();
      };
      void this.write(group, releaseSlot).finally(releaseSlot);
    }
  }

  /** The oldest pending write of each key not in the database, up to maxGroup, sorted by key. */
  private take(): Pending<Item, Result>[] {
    const group: Pending<Item, Result>[] = [];
    const taken = new Set<string>();
    const rest: Pending<Item, Result>[] = [];
    for (const p of this.pending) {
      if (group.length < this.options.maxGroup && !this.busy.has(p.key) && !taken.has(p.key)) {
        group.push(p);
        taken.add(p.key);
      } else {
        // A key's later write stays behind its earlier one.
        taken.add(p.key);
        rest.push(p);
      }
    }
    this.pending = rest;
    for (const p of group) {
      this.busy.add(p.key);
      // The key is free as soon as its own write answers, not when its whole group is done: a
      // write left waiting on someone else's lock after its group was refused holds up no one else.
      const { resolve, reject } = p;
      const free = () => {
        this.busy.delete(p.key);
        this.schedule();
      };
      p.resolve = (result) => {
        free();
        resolve(result);
      };
      p.reject = (error) => {
        free();
        reject(error);
      };
    }
    return group.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /**
   * Writes a group; `releaseSlot` gives its place among maxInFlight back as soon as the group's
   * statement has answered, so writes made again one by one after it was refused run beside the
   * next groups instead of holding one of their places.
   */
  private async write(group: Pending<Item, Result>[], releaseSlot: () => void): Promise<void> {
    if (group.length > 1) {
      let results: Result[];
      try {
        results = await this.writeGroup(group.map((p) => p.item));
      } catch (error) {
        releaseSlot();
        if (!(this.options.rolledBack?.(error) ?? false)) {
          for (const p of group) p.reject(error);
          return;
        }
        this.options.onRefused?.(error);
        await this.writeAlone(group);
        return;
      }
      releaseSlot();
      if (results.length !== group.length) {
        // The group ran: writing its writes again could apply them twice.
        const error = new Error(`a group of ${group.length} writes answered ${results.length} times`);
        for (const p of group) p.reject(error);
        return;
      }
      group.forEach((p, i) => p.resolve(results[i]));
      return;
    }
    await this.writeAlone(group);
  }

  private async writeAlone(group: Pending<Item, Result>[]): Promise<void> {
    await Promise.all(
      group.map((p) =>
        Promise.resolve(p.item)
          .then((item) => this.writeOne(item))
          .then(p.resolve, p.reject),
      ),
    );
  }
}
