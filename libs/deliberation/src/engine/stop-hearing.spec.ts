import { StopHearing } from './stop-hearing';

describe('StopHearing', () => {
  it('hears from the start unless told otherwise', () => {
    expect(new StopHearing().hearing).toBe(true);
    expect(new StopHearing().heardSinceTime(0, 1000)).toBe(true);
    const deaf = new StopHearing({ hearing: false });
    expect(deaf.hearing).toBe(false);
    expect(deaf.mark()).toBeNull();
    expect(deaf.heardSince(deaf.mark())).toBe(false);
  });

  it('a mark holds while the channel never broke, and is void after a loss, even once back', () => {
    const hearing = new StopHearing();
    const mark = hearing.mark();
    expect(hearing.heardSince(mark)).toBe(true);
    hearing.lost();
    expect(hearing.heardSince(mark)).toBe(false);
    hearing.resumed();
    expect(hearing.heardSince(mark)).toBe(false);
    // A mark taken once back holds again; repeated signals of the same state change nothing.
    const again = hearing.mark();
    hearing.resumed();
    expect(hearing.heardSince(again)).toBe(true);
    hearing.lost();
    hearing.lost();
    hearing.resumed();
    expect(hearing.heardSince(again)).toBe(false);
    expect(hearing.heardSince(hearing.mark())).toBe(true);
  });

  it('says whether stops were heard since a time of another clock, with a margin for skew', () => {
    let now = 10_000;
    const hearing = new StopHearing({ hearing: false, now: () => now });
    expect(hearing.heardSinceTime(20_000, 1000)).toBe(false);
    hearing.resumed();
    // Heard since 10 000: a message stored at 11 000 or later is covered, one at 10 500 is not.
    expect(hearing.heardSinceTime(11_000, 1000)).toBe(true);
    expect(hearing.heardSinceTime(10_500, 1000)).toBe(false);
    now = 15_000;
    hearing.lost();
    expect(hearing.heardSinceTime(12_000, 1000)).toBe(false);
    now = 16_000;
    hearing.resumed();
    expect(hearing.heardSinceTime(12_000, 1000)).toBe(false);
    expect(hearing.heardSinceTime(17_000, 1000)).toBe(true);
  });

  describe('decided by the database channel (a worker that LISTENs on PostgreSQL)', () => {
    it('keeps a mark through a break of the control channel: every stop is announced on the database one too', () => {
      const hearing = new StopHearing({ hearing: false, decidedBy: 'database' });
      hearing.resumed('control');
      // Redis is heard, PostgreSQL not yet: nothing carried is trusted.
      expect(hearing.hearing).toBe(false);
      expect(hearing.mark()).toBeNull();
      hearing.resumed('database');
      const mark = hearing.mark();
      hearing.lost('control');
      expect(hearing.hears('control')).toBe(false);
      expect(hearing.heardSince(mark)).toBe(true);
      hearing.resumed('control');
      expect(hearing.heardSince(mark)).toBe(true);
    });

    it('voids a mark when the database channel broke, even if the control channel never did', () => {
      // The case the control channel alone cannot cover: the process that stopped the
      // deliberation could not reach Redis, so this worker's unbroken subscription heard nothing.
      const hearing = new StopHearing({ hearing: false, decidedBy: 'database' });
      hearing.resumed('control');
      hearing.resumed('database');
      const mark = hearing.mark();
      hearing.lost('database');
      expect(hearing.heardSince(mark)).toBe(false);
      expect(hearing.hears('control')).toBe(true);
      hearing.resumed('database');
      expect(hearing.heardSince(mark)).toBe(false);
      expect(hearing.heardSince(hearing.mark())).toBe(true);
    });

    it('dates its hearing from the database channel', () => {
      let now = 10_000;
      const hearing = new StopHearing({ hearing: false, decidedBy: 'database', now: () => now });
      hearing.resumed('control');
      expect(hearing.heardSinceTime(20_000, 1000)).toBe(false);
      now = 12_000;
      hearing.resumed('database');
      expect(hearing.heardSinceTime(12_500, 1000)).toBe(false);
      expect(hearing.heardSinceTime(13_000, 1000)).toBe(true);
      now = 14_000;
      hearing.lost('control');
      expect(hearing.heardSinceTime(13_000, 1000)).toBe(true);
    });
  });

  it('by default is decided by the control channel, and ignores the database one', () => {
    const hearing = new StopHearing();
    expect(hearing.decidedBy).toBe('control');
    const mark = hearing.mark();
    hearing.lost('database');
    expect(hearing.heardSince(mark)).toBe(true);
    hearing.lost();
    expect(hearing.heardSince(mark)).toBe(false);
  });
});
