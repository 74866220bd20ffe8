import { ConfigError, loadConfig } from './config';
import { hashTagOf, parseRedisClusterNodes, parseRedisSettings, queuePrefixFor } from './redis-settings';

describe('Redis settings', () => {
  describe('one Redis (no REDIS_CLUSTER_NODES): as before', () => {
    it('keeps REDIS_URL, REDIS_PREFIX and the queue prefix as given', () => {
      expect(parseRedisSettings({})).toEqual({
        redisUrl: 'redis://127.0.0.1:6379',
        redisCluster: null,
        redisPrefix: 'conclave',
        queuePrefix: 'conclave',
      });
      const config = loadConfig({ REDIS_URL: 'redis://cache:6380/2', REDIS_PREFIX: 'team-a' });
      expect(config).toMatchObject({
        redisUrl: 'redis://cache:6380/2',
        redisCluster: null,
        redisPrefix: 'team-a',
        queuePrefix: 'team-a',
      });
    });

    it('never wraps or checks the prefix there (existing keys keep their names)', () => {
      expect(parseRedisSettings({ REDIS_PREFIX: 'a{b' }).queuePrefix).toBe('a{b');
      expect(parseRedisSettings({ REDIS_PREFIX: '' }).queuePrefix).toBe('');
      expect(parseRedisSettings({ REDIS_CLUSTER_NODES: '  ' }).redisCluster).toBeNull();
    });
  });

  describe('REDIS_CLUSTER_NODES', () => {
    it('reads host:port entries, a bare host (port 6379) and bracketed IPv6 addresses', () => {
      const settings = parseRedisSettings({
        REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-2.internal ,[::1]:7002,',
      });
      expect(settings.redisCluster).toEqual({
        nodes: [
          { host: '10.0.0.1', port: 7000 },
          { host: 'redis-2.internal', port: 6379 },
          { host: '::1', port: 7002 },
        ],
        username: null,
        password: null,
        tls: false,
      });
      expect(settings.redisPrefix).toBe('conclave');
      expect(settings.queuePrefix).toBe('{conclave}');
    });

    it('takes the login and TLS from redis:// or rediss:// entries', () => {
      expect(parseRedisClusterNodes('rediss://app:p%40ss@a:7000,rediss://app:p%40ss@b:7001')).toEqual({
        nodes: [
          { host: 'a', port: 7000 },
          { host: 'b', port: 7001 },
        ],
        username: 'app',
        password: 'p@ss',
        tls: true,
      });
      // A login written once applies to every node.
      expect(parseRedisClusterNodes('redis://:secret@a:7000,redis://b:7001')).toMatchObject({
        username: null,
        password: 'secret',
        tls: false,
      });
    });

    it('refuses entries it cannot use, naming the variable and the entry but never a password', () => {
      const refusals: [string, RegExp][] = [
        ['', /names no node/],
        [' , ,', /names no node/],
        ['a:0', /entry 1: the port must be from 1 to 65535/],
        ['a:7000,b:99999', /entry 2 is not host:port/],
        ['a:port', /entry 1 is not host:port/],
        ['http://a:7000', /entry 1: the scheme must be redis:\/\/ or rediss:\/\//],
        ['redis://a:7000/1', /entry 1: a Redis Cluster has only database 0/],
        ['redis://a:7000?tls=true', /entry 1 takes no \?query/],
        ['redis://a:7000,rediss://b:7001', /mixes redis:\/\/ and rediss:\/\//],
        ['redis://:s3cretA@a:7000,redis://:s3cretB@b:7001', /different users or passwords/],
        ['redis://:s3cret%zz@a:7000', /entry 1: the user or password is not valid percent-encoding/],
      ];
      for (const [raw, message] of refusals) {
        let thrown: unknown;
        try {
          parseRedisSettings({ REDIS_CLUSTER_NODES: raw || ',' });
        } catch (error) {
          thrown = error;
        }
        expect(thrown).toBeInstanceOf(ConfigError);
        expect((thrown as Error).message).toMatch(message);
        expect((thrown as Error).message).toMatch(/REDIS_CLUSTER_NODES/);
        expect((thrown as Error).message).not.toMatch(/s3cret/);
      }
    });

    it('refuses REDIS_URL beside it: one way to say where Redis is', () => {
      expect(() =>
        loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379', REDIS_CLUSTER_NODES: '127.0.0.1:7000' }),
      ).toThrow(/REDIS_URL and REDIS_CLUSTER_NODES are both set/);
      // An empty REDIS_URL is no REDIS_URL.
      expect(
        loadConfig({ REDIS_URL: '', REDIS_CLUSTER_NODES: '127.0.0.1:7000' }).redisCluster,
      ).not.toBeNull();
    });
  });

  describe('the queue prefix on a cluster', () => {
    it('is REDIS_PREFIX as a hash tag, or REDIS_PREFIX itself when it holds one', () => {
      expect(queuePrefixFor('conclave', true)).toBe('{conclave}');
      expect(queuePrefixFor('team-a:prod', true)).toBe('{team-a:prod}');
      expect(queuePrefixFor('{conclave}', true)).toBe('{conclave}');
      expect(queuePrefixFor('prod:{conclave}', true)).toBe('prod:{conclave}');
      expect(queuePrefixFor('conclave', false)).toBe('conclave');
      const config = loadConfig({ REDIS_CLUSTER_NODES: 'a:7000', REDIS_PREFIX: 'team-a' });
      expect(config.redisPrefix).toBe('team-a');
      expect(config.queuePrefix).toBe('{team-a}');
    });

    it('puts every key of a queue in one slot: they all hash the same tag', () => {
      for (const prefix of ['conclave', 'team-a:prod', '{x}', 'p:{y}:q']) {
        const queuePrefix = queuePrefixFor(prefix, true);
        const keys = ['wait', 'active', 'meta', 'events', 'stalled', 'de', '123'].map(
          (suffix) => `${queuePrefix}:deliberation-stages:${suffix}`,
        );
        expect(new Set(keys.map(hashTagOf)).size).toBe(1);
      }
    });

    it('refuses prefixes that cannot make a tag', () => {
      expect(() => queuePrefixFor('', true)).toThrow(/REDIS_PREFIX must not be empty on a Redis Cluster/);
      expect(() => queuePrefixFor('a{}b', true)).toThrow(/braces must enclose a non-empty hash tag/);
      expect(() => queuePrefixFor('}a', true)).toThrow(ConfigError);
      expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'a:7000', REDIS_PREFIX: 'x{' })).toThrow(/REDIS_PREFIX/);
    });
  });

  it('hashTagOf follows Redis Cluster: the first {…} when not empty, else the whole key', () => {
    expect(hashTagOf('plain')).toBe('plain');
    expect(hashTagOf('a:{tag}:b')).toBe('tag');
    expect(hashTagOf('{one}{two}')).toBe('one');
    expect(hashTagOf('a{}b{c}')).toBe('a{}b{c}');
    expect(hashTagOf('a{b')).toBe('a{b');
    expect(hashTagOf('{a{b}c}')).toBe('a{b');
  });
});
