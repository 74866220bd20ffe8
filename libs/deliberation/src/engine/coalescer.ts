interface Pending<Item, Result> {
  item: Item;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: items submitted while a flush is running (or in the same turn of the event loop)
 * are flushed together by the next one, so calls that settle at the same moment cost one
 * transaction instead of one each queueing on the same row lock. `flush` returns one result per
 * item, in order; if it throws, every item of that flush is rejected with the error.
 */
export class Coalescer<Item, Result> {
  private pending: Pending<Item, Result>[] = [];
  private draining = false;

  constructor(private readonly flush: (items: Item[]) => Promise<Result[]>) {}

  submit(item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (!this.draining) {
        this.draining = true;
        // setImmediate, not a microtask: timers and I/O callbacks of this turn still get to submit.
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const group = this.pending.splice(0);
      try {
        const results = await this.flush(group.map((p) => p.item));
        if (results.length !== group.length) {
          throw new Error(`flush returned ${results.length} results for ${group.length} items`);
        }
        group.forEach((p, i) => p.resolve(results[i]));
      } catch (error) {
        for (const p of group) p.reject(error);
      }
    }
    this.draining = false;
  }
}
