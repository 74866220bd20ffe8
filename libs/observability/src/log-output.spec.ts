import { Writable } from 'node:stream';
import { connectionErrorLogger, repeatLimited, routeConsoleTo } from './log-output';
import { createLogger } from './logger';

/** A logger whose lines land in an array. */
function capture(level = 'info') {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((l) => l !== ''),
      );
      done();
    },
  });
  return { logger: createLogger(level, 'test', destination), lines };
}

describe('repeat-limited logging', () => {
  afterEach(() => jest.useRealTimers());

  it('writes a message when first seen, then once per quiet period with how many were left out', () => {
    jest.useFakeTimers({ now: 0 });
    const written: string[] = [];
    const write = repeatLimited((m) => written.push(m), 1000);
    for (let i = 0; i < 5; i++) write('connect ECONNREFUSED');
    write('other');
    jest.setSystemTime(999);
    write('connect ECONNREFUSED');
    jest.setSystemTime(1000);
    write('connect ECONNREFUSED');
    write('connect ECONNREFUSED');
    jest.setSystemTime(2500);
    write('connect ECONNREFUSED');
    expect(written).toEqual([
      'connect ECONNREFUSED',
      'other',
      'connect ECONNREFUSED (5 more like it since the last report)',
      'connect ECONNREFUSED (1 more like it since the last report)',
    ]);
  });

  it('takes the message of an error, or the error as text', () => {
    const written: string[] = [];
    const listener = connectionErrorLogger((m) => written.push(m));
    listener(new Error('connect ETIMEDOUT'));
    listener('plain');
    expect(written).toEqual(['connect ETIMEDOUT', 'plain']);
  });
});

describe('console output of libraries', () => {
  it('leaves as JSON lines of the logger, one per call, a stack only at debug, repeats limited', () => {
    const { logger, lines } = capture('info');
    const restore = routeConsoleTo(logger);
    try {
      console.warn('IMPORTANT! Eviction policy is allkeys-lru. It should be "noeviction"');
      const error = new Error('connect ECONNREFUSED 127.0.0.1:6390');
      console.error(error);
      console.error(error);
      console.log('two\nlines', { a: 1 });
    } finally {
      restore();
    }
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed.map((p) => [p.level, p.source, p.msg])).toEqual([
      ['warn', 'console.warn', 'IMPORTANT! Eviction policy is allkeys-lru. It should be "noeviction"'],
      ['error', 'console.error', 'Error: connect ECONNREFUSED 127.0.0.1:6390'],
      ['info', 'console.log', 'two\nlines { a: 1 }'],
    ]);
    expect(lines.join('\n')).not.toContain('    at ');
  });

  it('gives the stack at debug level, and restores the console', () => {
    const { logger, lines } = capture('debug');
    const original = console.error;
    const restore = routeConsoleTo(logger);
    console.error(new Error('boom'));
    restore();
    expect(console.error).toBe(original);
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed[0]).toMatchObject({ level: 'debug', msg: 'stack' });
    expect(String(parsed[0].stack)).toMatch(/^Error: boom\n\s+at /);
    expect(parsed[1]).toMatchObject({ level: 'error', msg: 'Error: boom' });
  });
});
