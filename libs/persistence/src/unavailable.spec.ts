import { Client } from 'pg';
import IORedis from 'ioredis';
import { QueryRunnerAlreadyReleasedError, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { isStoreUnavailable } from '@conclave/persistence';

describe('isStoreUnavailable', () => {
  it('recognises a PostgreSQL server that cannot be reached', async () => {
    const client = new Client({
      connectionString: 'postgres://postgres@127.0.0.1:1/none',
      connectionTimeoutMillis: 1000,
    });
    const error = await client.connect().then(
      () => null,
      (e: unknown) => e,
    );
    expect(isStoreUnavailable(error)).toBe(true);
  });

  it('recognises a Redis that cannot be reached', async () => {
    const redis = new IORedis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    redis.on('error', () => undefined);
    const error = await redis.set('k', 'v').then(
      () => null,
      (e: unknown) => e,
    );
    expect(isStoreUnavailable(error)).toBe(true);
    redis.disconnect();
  });

  it("recognises TypeORM's errors for a transaction whose connection died", () => {
    expect(isStoreUnavailable(new QueryRunnerAlreadyReleasedError())).toBe(true);
    expect(isStoreUnavailable(new QueryRunnerProviderAlreadyReleasedError())).toBe(true);
  });

  it('leaves ordinary errors alone', () => {
    expect(isStoreUnavailable(new Error('duplicate key value violates unique constraint'))).toBe(false);
    expect(isStoreUnavailable(Object.assign(new Error('syntax'), { code: '42601' }))).toBe(false);
    expect(isStoreUnavailable(null)).toBe(false);
    expect(isStoreUnavailable('text')).toBe(false);
  });
});
