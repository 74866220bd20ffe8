import { GroupedWrites } from './grouped-writes';

interface Write {
  key: string;
  value: string;
}

/** A database stand-in whose answers the test releases by hand, recording what it was sent. */
class Recorder {
  readonly groups: string[][] = [];
  readonly singles: string[] = [];
  private releases: (() => void)[] = [];
  /** How the next groups fail: refused by the database (rolled back), or lost on the way. */
  failGroups: 'refused' | 'lost' | null = null;
  /** Groups answer one result too few. */
  shortGroups = false;
  failValue: string | null = null;

  readonly writes = new GroupedWrites<Write, string>(
    async (items) => {
      this.groups.push(items.map((w) => w.value));
      await this.held();
      if (this.failGroups) throw new Error(this.failGroups);
      const results = items.map((w) => `ok:${w.value}`);
      return this.shortGroups ? results.slice(1) : results;
    },
    async (item) => {
      this.singles.push(item.value);
      await this.held();
      if (item.value === this.failValue) throw new Error(`${item.value} failed`);
      return `ok:${item.value}`;
    },
    { maxInFlight: 2, maxGroup: 3, rolledBack: (error) => (error as Error).message === 'refused' },
  );

  private held(): Promise<void> {
    return new Promise((resolve) => this.releases.push(resolve));
  }

  get waiting(): number {
    return this.releases.length;
  }

  /** Answers every write in the database now. */
  release(): void {
    const releases = this.releases.splice(0);
    for (const release of releases) release();
  }
}

/** A write's answer, or `rejected: <message>`: every write's fate in one array. */
const answered = (write: Promise<string>): Promise<string> =>
  write.then(
    (v) => v,
    (e: Error) => `rejected: ${e.message}`,
  );

const turn = () => new Promise((resolve) => setImmediate(resolve));
async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await turn();
}

describe('GroupedWrites', () => {
  it('sends a lone write on its own, at once', async () => {
    const db = new Recorder();
    const answer = db.writes.submit('a', { key: 'a', value: 'a1' });
    await turn();
    expect(db.singles).toEqual(['a1']);
    expect(db.groups).toEqual([]);
    db.release();
    await expect(answer).resolves.toBe('ok:a1');
  });

  it('groups writes of one turn, sorted by key, and answers each with its own result', async () => {
    const db = new Recorder();
    const answers = ['c', 'a', 'b'].map((k) => db.writes.submit(k, { key: k, value: `${k}1` }));
    await turn();
    expect(db.groups).toEqual([['a1', 'b1', 'c1']]);
    db.release();
    await expect(Promise.all(answers)).resolves.toEqual(['ok:c1', 'ok:a1', 'ok:b1']);
  });

  it('keeps at most maxInFlight groups in the database; writes meanwhile go together next', async () => {
    const db = new Recorder();
    const first = db.writes.submit('a', { key: 'a', value: 'a1' });
    await turn();
    const second = db.writes.submit('b', { key: 'b', value: 'b1' });
    await turn();
    expect(db.waiting).toBe(2);
    const later = ['c', 'd', 'e', 'f'].map((k) => db.writes.submit(k, { key: k, value: `${k}1` }));
    await settle();
    // Both slots are taken: nothing more reaches the database until one answers.
    expect(db.singles).toEqual(['a1', 'b1']);
    expect(db.groups).toEqual([]);
    db.release();
    await settle();
    // maxGroup 3: c, d, e in one group, f in the other slot.
    expect(db.groups).toEqual([['c1', 'd1', 'e1']]);
    expect(db.singles).toEqual(['a1', 'b1', 'f1']);
    db.release();
    await expect(Promise.all([first, second, ...later])).resolves.toEqual([
      'ok:a1',
      'ok:b1',
      'ok:c1',
      'ok:d1',
      'ok:e1',
      'ok:f1',
    ]);
  });

  it("never has two writes of one key in the database at once, and keeps each key's order", async () => {
    const db = new Recorder();
    const answers = [
      db.writes.submit('a', { key: 'a', value: 'a1' }),
      db.writes.submit('a', { key: 'a', value: 'a2' }),
      db.writes.submit('b', { key: 'b', value: 'b1' }),
      db.writes.submit('a', { key: 'a', value: 'a3' }),
    ];
    await settle();
    expect(db.groups).toEqual([['a1', 'b1']]);
    expect(db.singles).toEqual([]);
    db.release();
    await settle();
    expect(db.singles).toEqual(['a2']);
    db.release();
    await settle();
    expect(db.singles).toEqual(['a2', 'a3']);
    db.release();
    await expect(Promise.all(answers)).resolves.toEqual(['ok:a1', 'ok:a2', 'ok:b1', 'ok:a3']);
  });

  it('makes each write of a group the database refused on its own: only the one that fails alone fails', async () => {
    const db = new Recorder();
    db.failGroups = 'refused';
    db.failValue = 'b1';
    const answers = ['a', 'b', 'c'].map((k) => answered(db.writes.submit(k, { key: k, value: `${k}1` })));
    await turn();
    db.release();
    await settle();
    expect(db.singles).toEqual(['a1', 'b1', 'c1']);
    db.release();
    await expect(Promise.all(answers)).resolves.toEqual(['ok:a1', 'rejected: b1 failed', 'ok:c1']);
  });

  it('fails every write of a group that may have committed (lost on the way), writing none again', async () => {
    const db = new Recorder();
    db.failGroups = 'lost';
    const answers = ['a', 'b'].map((k) => answered(db.writes.submit(k, { key: k, value: `${k}1` })));
    await turn();
    db.release();
    await expect(Promise.all(answers)).resolves.toEqual(['rejected: lost', 'rejected: lost']);
    expect(db.singles).toEqual([]);
    // The keys are free again: the next write goes.
    db.failGroups = null;
    const next = db.writes.submit('a', { key: 'a', value: 'a2' });
    await turn();
    db.release();
    await expect(next).resolves.toBe('ok:a2');
  });

  it('fails every write of a group that answered for fewer writes than it carried, writing none again', async () => {
    const db = new Recorder();
    db.shortGroups = true;
    const answers = ['a', 'b'].map((k) => answered(db.writes.submit(k, { key: k, value: `${k}1` })));
    await turn();
    db.release();
    const results = await Promise.all(answers);
    expect(results).toEqual([
      expect.stringMatching(/answered 1 times/),
      expect.stringMatching(/answered 1 times/),
    ]);
    expect(db.singles).toEqual([]);
  });

  it('answers every write when the single writer throws before it returns a promise', async () => {
    const writes = new GroupedWrites<string, string>(
      async () => {
        throw Object.assign(new Error('refused'), { code: '40P01' });
      },
      (item) => {
        if (item === 'b') throw new Error('b threw');
        return Promise.resolve(`ok:${item}`);
      },
      { maxInFlight: 1, maxGroup: 3, rolledBack: () => true },
    );
    const answers = ['a', 'b', 'c'].map((k) => answered(writes.submit(k, k)));
    await expect(Promise.all(answers)).resolves.toEqual(['ok:a', 'rejected: b threw', 'ok:c']);
  });

  it("after a refused group, frees each key as its own write answers and gives the group's place back", async () => {
    const groups: string[][] = [];
    const singles: string[] = [];
    const gates = new Map<string, () => void>();
    let refuse = true;
    const writes = new GroupedWrites<string, string>(
      async (items) => {
        groups.push(items);
        if (refuse) {
          refuse = false;
          throw Object.assign(new Error('lock timeout'), { code: '55P03' });
        }
        return items.map((item) => `ok:${item}`);
      },
      (item) => {
        singles.push(item);
        return new Promise((resolve) => gates.set(item, () => resolve(`ok:${item}`)));
      },
      { maxInFlight: 1, maxGroup: 4, rolledBack: () => true },
    );
    const a1 = writes.submit('a', 'a1');
    const b1 = writes.submit('b', 'b1');
    let b1Answered = false;
    void b1.then(() => (b1Answered = true));
    await settle();
    expect(groups).toEqual([['a1', 'b1']]);
    expect(singles).toEqual(['a1', 'b1']);
    // a's own write answers; b's stays behind someone else's lock.
    gates.get('a1')?.();
    await expect(a1).resolves.toBe('ok:a1');
    const later = [writes.submit('a', 'a2'), writes.submit('c', 'c1')];
    await settle();
    // The only place was given back and a is free again: a2 goes with c1 while b1 still waits.
    expect(groups).toEqual([
      ['a1', 'b1'],
      ['a2', 'c1'],
    ]);
    await expect(Promise.all(later)).resolves.toEqual(['ok:a2', 'ok:c1']);
    expect(b1Answered).toBe(false);
    // b's next write waits for b1.
    const b2 = writes.submit('b', 'b2');
    await settle();
    expect(singles).toEqual(['a1', 'b1']);
    gates.get('b1')?.();
    await expect(b1).resolves.toBe('ok:b1');
    await settle();
    expect(singles).toEqual(['a1', 'b1', 'b2']);
    gates.get('b2')?.();
    await expect(b2).resolves.toBe('ok:b2');
  });

  it('refuses settings that would never write', () => {
    const write = async () => 'x';
    const group = async () => ['x'];
    expect(() => new GroupedWrites(group, write, { maxInFlight: 0, maxGroup: 1 })).toThrow(/maxInFlight/);
    expect(() => new GroupedWrites(group, write, { maxInFlight: 1, maxGroup: 0 })).toThrow(/maxGroup/);
  });
});
