import { ConfigError, loadConfig } from './config';
import { LIFECYCLE_DEFAULT_INTERVAL_MS, RETENTION_DEFAULT_CHUNK } from './retention-settings';

describe('RETENTION_DAYS and the data-lifecycle job', () => {
  it('keeps everything unless RETENTION_DAYS is set', () => {
    expect(loadConfig({}).lifecycle).toEqual({
      retentionDays: null,
      intervalMs: LIFECYCLE_DEFAULT_INTERVAL_MS,
      chunkSize: RETENTION_DEFAULT_CHUNK,
    });
    expect(loadConfig({ RETENTION_DAYS: '' }).lifecycle.retentionDays).toBeNull();
  });

  it('reads the retention, the interval and the chunk size', () => {
    expect(
      loadConfig({ RETENTION_DAYS: '90', LIFECYCLE_INTERVAL_MS: '500', RETENTION_CHUNK_SIZE: '25' })
        .lifecycle,
    ).toEqual({ retentionDays: 90, intervalMs: 500, chunkSize: 25 });
    expect(loadConfig({ RETENTION_DAYS: ' 7 ' }).lifecycle.retentionDays).toBe(7);
  });

  it.each(['0', '-3', '1.5', '30d', 'forever', '1e3', '36501'])(
    'refuses RETENTION_DAYS=%s with a message naming it',
    (value) => {
      let error: unknown;
      try {
        loadConfig({ RETENTION_DAYS: value });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toBe(
        `RETENTION_DAYS must be a whole number of days from 1 to 36500 (leave it unset to keep everything), got "${value}"`,
      );
    },
  );

  it('refuses intervals and chunk sizes out of range, naming the variable', () => {
    expect(() => loadConfig({ LIFECYCLE_INTERVAL_MS: '50' })).toThrow(
      /^LIFECYCLE_INTERVAL_MS must be a whole number of milliseconds from 100/,
    );
    expect(() => loadConfig({ LIFECYCLE_INTERVAL_MS: 'hourly' })).toThrow(ConfigError);
    expect(() => loadConfig({ RETENTION_CHUNK_SIZE: '0' })).toThrow(
      /^RETENTION_CHUNK_SIZE must be a whole number of conversations from 1 to 10000, got "0"$/,
    );
    expect(() => loadConfig({ RETENTION_CHUNK_SIZE: '20000' })).toThrow(/RETENTION_CHUNK_SIZE/);
  });
});
