import { ConfigError } from './errors';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
export const DEFAULT_REDIS_PREFIX = 'conclave';
const DEFAULT_REDIS_PORT = 6379;

/** One node named in REDIS_CLUSTER_NODES. */
export interface RedisNodeAddress {
  host: string;
  port: number;
}

/**
 * REDIS_CLUSTER_NODES, read: a few nodes of the cluster (the client asks them for the others), and
 * what every connection to a node of it uses. Holds credentials: never log it.
 */
export interface RedisClusterSettings {
  nodes: RedisNodeAddress[];
  username: string | null;
  password: string | null;
  /** `rediss://` entries: TLS to every node. */
  tls: boolean;
}

/** Where Redis is and how this deployment names what it keeps there. */
export interface RedisSettings {
  /** REDIS_URL: the one Redis, when not on a cluster (unused when `redisCluster` is set). */
  redisUrl: string;
  /** REDIS_CLUSTER_NODES: set, every connection is a Redis Cluster client; null, one Redis. */
  redisCluster: RedisClusterSettings | null;
  /** REDIS_PREFIX: the prefix of every key and channel this deployment uses. */
  redisPrefix: string;
  /**
   * The BullMQ prefix of the queues. On one Redis it is REDIS_PREFIX. On a cluster it must be a
   * hash tag, because BullMQ's scripts touch several keys of a queue at once and a cluster runs a
   * script only when all its keys are in one hash slot: REDIS_PREFIX in braces (`{conclave}`), or
   * REDIS_PREFIX itself when it already holds a hash tag.
   */
  queuePrefix: string;
}

/**
 * The part of a key Redis Cluster hashes to pick its slot: the text between the first `{` and the
 * next `}` when that is not empty (a hash tag), else the whole key.
 */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

/** Whether every key starting with `prefix` hashes the same part of it (so shares one slot). */
function holdsHashTag(prefix: string): boolean {
  const open = prefix.indexOf('{');
  const close = open < 0 ? -1 : prefix.indexOf('}', open + 1);
  return open >= 0 && close > open + 1;
}

/** The BullMQ prefix for REDIS_PREFIX (see RedisSettings.queuePrefix). */
export function queuePrefixFor(redisPrefix: string, cluster: boolean): string {
  if (!cluster || holdsHashTag(redisPrefix)) return redisPrefix;
  if (redisPrefix === '') throw new ConfigError('REDIS_PREFIX must not be empty on a Redis Cluster');
  if (/[{}]/.test(redisPrefix)) {
    throw new ConfigError(
      'REDIS_PREFIX: on a Redis Cluster its braces must enclose a non-empty hash tag (like {conclave}), or leave them out',
    );
  }
  return `{${redisPrefix}}`;
}

interface ParsedNode extends RedisNodeAddress {
  tls: boolean;
  username: string;
  password: string;
}

/** One entry: `host:port`, `host` (port 6379), `[v6 address]:port`, or a `redis://` / `rediss://` URL. */
function parseNode(raw: string, index: number): ParsedNode {
  // The entry itself may hold a password: messages name its position, never its text.
  const where = `REDIS_CLUSTER_NODES entry ${index + 1}`;
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `redis://${raw}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`${where} is not host:port or a redis:// URL`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new ConfigError(`${where}: the scheme must be redis:// or rediss://`);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!host) throw new ConfigError(`${where} names no host`);
  if (url.pathname !== '' && url.pathname !== '/') {
    throw new ConfigError(`${where}: a Redis Cluster has only database 0, so the entry takes no /path`);
  }
  if (url.search || url.hash) throw new ConfigError(`${where} takes no ?query or #fragment`);
  const port = url.port === '' ? DEFAULT_REDIS_PORT : Number(url.port);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new ConfigError(`${where}: the port must be from 1 to 65535`);
  }
  let username: string;
  let password: string;
  try {
    username = decodeURIComponent(url.username);
    password = decodeURIComponent(url.password);
  } catch {
    throw new ConfigError(`${where}: the user or password is not valid percent-encoding`);
  }
  return { host, port, tls: url.protocol === 'rediss:', username, password };
}

/** REDIS_CLUSTER_NODES: comma-separated entries (see parseNode); every entry one scheme and one login. */
export function parseRedisClusterNodes(raw: string): RedisClusterSettings {
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new ConfigError('REDIS_CLUSTER_NODES names no node');
  const nodes = entries.map(parseNode);
  if (new Set(nodes.map((n) => n.tls)).size > 1) {
    throw new ConfigError('REDIS_CLUSTER_NODES mixes redis:// and rediss:// entries: use one scheme');
  }
  const logins = new Set(
    nodes.filter((n) => n.username || n.password).map((n) => JSON.stringify([n.username, n.password])),
  );
  if (logins.size > 1) {
    throw new ConfigError('REDIS_CLUSTER_NODES entries carry different users or passwords: use one login');
  }
  const login = nodes.find((n) => n.username || n.password);
  return {
    nodes: nodes.map(({ host, port }) => ({ host, port })),
    username: login?.username || null,
    password: login?.password || null,
    tls: nodes[0].tls,
  };
}

/** REDIS_URL, REDIS_CLUSTER_NODES and REDIS_PREFIX, read and checked. */
export function parseRedisSettings(env: NodeJS.ProcessEnv): RedisSettings {
  const clusterNodes = env.REDIS_CLUSTER_NODES?.trim();
  const redisPrefix = env.REDIS_PREFIX ?? DEFAULT_REDIS_PREFIX;
  if (!clusterNodes) {
    return {
      redisUrl: env.REDIS_URL ?? DEFAULT_REDIS_URL,
      redisCluster: null,
      redisPrefix,
      queuePrefix: redisPrefix,
    };
  }
  if (env.REDIS_URL) {
    throw new ConfigError(
      'REDIS_URL and REDIS_CLUSTER_NODES are both set: set REDIS_CLUSTER_NODES for a Redis Cluster or REDIS_URL for one Redis, not both',
    );
  }
  return {
    redisUrl: DEFAULT_REDIS_URL,
    redisCluster: parseRedisClusterNodes(clusterNodes),
    redisPrefix,
    queuePrefix: queuePrefixFor(redisPrefix, true),
  };
}
