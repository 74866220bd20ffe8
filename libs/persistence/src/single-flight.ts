/**
 * At most one run of `work(key)` at a time per key in this process. A call that arrives while a
 * run is under way asks for one more run after it (however many such calls arrive, one) and
 * resolves when that run ends: everything asked for is done by a run that started after the ask.
 */
export class KeyedSingleFlight {
  private readonly running = new Map<string, { again: boolean; done: Promise<void> }>();

  constructor(private readonly work: (key: string) => Promise<void>) {}

  run(key: string): Promise<void> {
    const current = this.running.get(key);
    if (current) {
      current.again = true;
      return current.done;
    }
    const entry = { again: false, done: Promise.resolve() };
    entry.done = (async () => {
      try {
        do {
          entry.again = false;
          await this.work(key);
        } while (entry.again);
      } finally {
        this.running.delete(key);
      }
    })();
    this.running.set(key, entry);
    return entry.done;
  }

  /** Keys with a run under way (for tests and metrics). */
  get size(): number {
    return this.running.size;
  }
}
