import { MODEL_ID_PATTERN, type ModeDefaults } from '@conclave/contracts';
import { ConfigError } from './errors';
import { parseDatabaseSettings, type DatabaseSettings } from './database-settings';
import { parseMetricsToken } from './metrics-settings';
import { parseProviderLimits, type ProviderLimits } from './provider-limits';
import { parseRedisSettings, type RedisClusterSettings } from './redis-settings';
import { parseLifecycleSettings, type LifecycleSettings } from './retention-settings';
import { parsePublicUrl } from './public-url';

/**
 * Every setting Conclave reads, in one place. The README's configuration table mirrors this file.
 */
export type AuthMode = 'apikey' | 'none';

export interface ConclaveConfig {
  nodeEnv: string;
  port: number;
  databaseUrl: string;
  /** DATABASE_POOL_MODE and DATABASE_DIRECT_URL: a pooler in front of PostgreSQL (database-settings.ts). */
  database: DatabaseSettings;
  /**
   * DATABASE_CONNECT_TIMEOUT_MS: how long opening a PostgreSQL connection (or waiting for one of
   * the pool's) may take before it fails as "storage unavailable"; 0 waits without end.
   */
  databaseConnectTimeoutMs: number;
  /** REDIS_URL: the one Redis, when not on a cluster (unused when `redisCluster` is set). */
  redisUrl: string;
  /** REDIS_CLUSTER_NODES: set, every Redis connection is a Redis Cluster client (redis-settings.ts). */
  redisCluster: RedisClusterSettings | null;
  /** Prefix of every Redis key and channel this deployment uses (BullMQ queues, event channel). */
  redisPrefix: string;
  /** The BullMQ prefix: REDIS_PREFIX, or on a Redis Cluster that prefix as a hash tag (`{conclave}`). */
  queuePrefix: string;
  authMode: AuthMode;
  /** Largest accepted request body; batches have their own, larger limit. */
  bodyLimit: string;
  batchBodyLimit: string;
  /** The built web client the gateway serves at `/`. */
  webDir: string;
  /** The operator's rosters for requests that name no models (00-shared.md §7). */
  defaults: ModeDefaults;
  deliberationCapMs: number;
  /**
   * latencyJitter: each simulated call takes latencyMs × (1 ± jitter), 0 = exactly latencyMs.
   * streamPieces: a streamed simulated answer is written in this many pieces over its latency.
   */
  simulator: { latencyMs: number; latencyJitter: number; streamPieces: number; seed: string };
  worker: {
    concurrency: number;
    /** PostgreSQL connections of one worker: jobs hold one only for short statements and transactions. */
    dbPoolSize: number;
    /** A dead worker's stage job is taken over within about lockDurationMs + stalledIntervalMs. */
    lockDurationMs: number;
    stalledIntervalMs: number;
    /**
     * How often a worker renews its lease on the stages it runs and checks that Redis still holds
     * the queue (its epoch key); work lost with Redis is queued again a few heartbeats after.
     */
    heartbeatMs: number;
    maxStalledCount: number;
    attempts: number;
    /** How often a worker looks for deliberations that stopped moving, and how idle they must be. */
    reconcileIntervalMs: number;
    reconcileIdleMs: number;
    /** The worker's own HTTP port: /health/live, /health/ready and /metrics only. */
    httpPort: number;
    /** On SIGTERM, how long active stages may run on before the worker stops and hands them back. */
    shutdownTimeoutMs: number;
    /**
     * While PostgreSQL is away: how long a stage keeps trying to store the model answers it has
     * (instead of failing and asking for them again), and how many bytes of answers one worker
     * holds in memory meanwhile (over it, stages fail as without waiting).
     */
    storeHoldMs: number;
    storeHoldBytes: number;
  };
  /** True when a real provider is configured (OpenRouter key or an OpenAI-compatible base URL). */
  realProviderConfigured: boolean;
  /**
   * GET /api/models: the sources of the model list, from the settings the worker's provider reads
   * (OpenRouter, when its key is set, serves every non-`sim/` id, so the OpenAI-compatible list is
   * then not offered), how long a fetched list is served before it is fetched again, and how long
   * one fetch may take. Holds credentials: never log it.
   */
  modelCatalogue: ModelCatalogueSettings;
  /** Lowest level logged; prompt and answer text is only ever logged at debug. */
  logLevel: LogLevel;
  /** METRICS_TOKEN: when set, /metrics (gateway and worker) needs `Authorization: Bearer <token>`. */
  metricsToken: string | null;
  /** PROVIDER_LIMITS: fleet-wide caps per provider and model; empty means none (no Redis per call). */
  providerLimits: ProviderLimits;
  /** Per-user limits, held in Redis so they apply across every gateway replica. */
  abuse: {
    requestsPerMinute: number;
    deliberationsPerMinute: number;
    /** Batch items per key in any sliding hour; batch items do not count as deliberations. */
    batchItemsPerHour: number;
    /** Requests with a wrong API key per client address (IPv6: per /64) in any sliding minute. */
    authFailuresPerMinute: number;
    /** Proxies in front of the gateway whose X-Forwarded-For is believed (Express `trust proxy` N). */
    trustProxyHops: number;
    activeBatchesPerUser: number;
  };
  /**
   * Live connections (Socket.IO sockets, SSE streams), counted per user on each gateway replica
   * (0 = no cap), and the bounds that close a client that does not read what it is sent.
   */
  streams: {
    maxSocketsPerUser: number;
    maxSseStreamsPerUser: number;
    /** Message and batch subscriptions over all of a user's sockets, plus its SSE streams. */
    maxSubscriptionsPerUser: number;
    /** Bytes sent to one client and not yet taken by the network: beyond this it is closed at once. */
    maxBufferedBytes: number;
    /** How long a client's backlog may stay above the high-water mark before it is closed. */
    drainTimeoutMs: number;
    /** How often open streams' keys are checked against PostgreSQL (revocations Redis did not carry). */
    keyRecheckMs: number;
  };
  /**
   * Batch reports and comparisons, per gateway replica: how many are computed at once, how many of
   * one user's may wait (past it a 429), how many may wait in all (past it a 503), and the bytes of
   * finished batches' reports and comparisons kept for reuse (0 = none kept).
   */
  reports: { slots: number; queuePerUser: number; queueTotal: number; cacheBytes: number };
  /**
   * V1_RETRY_GRACE_MS: how long a /v1 chat request's deliberation started with an Idempotency-Key
   * keeps running after its client went away, for a retry with the same key to reattach; 0 cancels
   * at once, as without a key.
   */
  v1: { retryGraceMs: number };
  /** Origins (scheme://host[:port]) allowed to call the API and open sockets from another site. */
  corsOrigins: string[];
  /**
   * ALLOWED_HOSTS: host names (lower case, IPv6 in brackets) a single-user gateway answers to besides
   * loopback ones and the hosts of CORS_ORIGINS; any other Host header is refused (DNS rebinding).
   */
  allowedHosts: string[];
  /**
   * PUBLIC_URL: the base of every link in an API answer (public-url.ts), without a trailing slash;
   * null: the gateway's own listening address. Never taken from a request's headers.
   */
  publicUrl: string | null;
  /**
   * MCP_PROGRESS_INTERVAL_MS: while an MCP `deliberate` call runs and nothing else happened for
   * this long, it sends a progress notification anyway (clients that reset their request timeout
   * on progress then never cut a long run off).
   */
  mcp: { progressIntervalMs: number };
  /**
   * RETENTION_DAYS, LIFECYCLE_INTERVAL_MS, RETENTION_CHUNK_SIZE: the workers' fleet-wide
   * data-lifecycle job (event partitions ahead of time; retention when RETENTION_DAYS is set).
   */
  lifecycle: LifecycleSettings;
}

export interface ModelCatalogueSettings {
  /** OPENROUTER_API_KEY and OPENROUTER_BASE_URL; null without a key. */
  openrouter: { apiKey: string; baseUrl: string } | null;
  /**
   * OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL_PREFIX (ids `<prefix>/<server's id>` are
   * sent without the prefix); null without a base URL.
   */
  openaiCompatible: { baseUrl: string; apiKey: string; modelPrefix: string } | null;
  /** MODEL_CATALOGUE_REFRESH_MS. */
  refreshMs: number;
  /** MODEL_CATALOGUE_TIMEOUT_MS. */
  timeoutMs: number;
}

export const OPENROUTER_DEFAULT_BASE_URL = 'https://openrouter.ai/api/v1';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export { ConfigError } from './errors';

function checkRoster(variable: string, models: string[], min: number, max: number, unique = true): void {
  const bad = models.filter((m) => !MODEL_ID_PATTERN.test(m));
  if (bad.length > 0) throw new ConfigError(`${variable}: not a provider/name model id: ${bad.join(', ')}`);
  if (models.length < min || models.length > max) {
    throw new ConfigError(`${variable} must name ${min} to ${max} models, got ${models.length}`);
  }
  if (unique && new Set(models).size !== models.length)
    throw new ConfigError(`${variable} names a model twice`);
}

function checkSeparate(variable: string, model: string, roster: string[], rosterVariable: string): void {
  if (!MODEL_ID_PATTERN.test(model))
    throw new ConfigError(`${variable}: not a provider/name model id: ${model}`);
  if (roster.includes(model))
    throw new ConfigError(`${variable} (${model}) must not be one of ${rosterVariable}`);
}

/** A default roster a mode would refuse in a request is refused at start-up, where an operator sees it. */
function checkDefaults(d: ModeDefaults): void {
  checkRoster('DEFAULT_COUNCIL_MODELS', d.council.councilModels, 2, 6);
  if (!MODEL_ID_PATTERN.test(d.council.chairmanModel)) {
    throw new ConfigError(`DEFAULT_CHAIRMAN_MODEL: not a provider/name model id: ${d.council.chairmanModel}`);
  }
  checkRoster('DEFAULT_JURY_MODELS', d.jury.jurorModels, 3, 6);
  checkSeparate('DEFAULT_JURY_FOREMAN', d.jury.foremanModel, d.jury.jurorModels, 'DEFAULT_JURY_MODELS');
  checkRoster('DEFAULT_DEBATE_MODELS', d.debate.models, 3, 6, false);
  checkRoster('DEFAULT_VOTE_MODELS', d.vote.models, 3, 6, false);
  checkRoster('DEFAULT_DELPHI_PANELISTS', d.delphi.panelistModels, 3, 7, false);
  checkSeparate(
    'DEFAULT_DELPHI_FACILITATOR',
    d.delphi.facilitatorModel,
    d.delphi.panelistModels,
    'DEFAULT_DELPHI_PANELISTS',
  );
}

const list = (value: string | undefined): string[] | undefined =>
  value
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new ConfigError(`${name} must be an integer >= ${min}, got "${raw}"`);
  }
  return value;
}

/**
 * V1_RETRY_GRACE_MS: 0 (off), or from 1 s (each gateway renews what it holds a quarter of the grace
 * apart, at least every 250 ms) to an hour.
 */
function retryGrace(env: NodeJS.ProcessEnv): number {
  const raw = env.V1_RETRY_GRACE_MS;
  if (raw === undefined || raw === '') return 120_000;
  const value = Number(raw);
  if (!Number.isInteger(value) || (value !== 0 && (value < 1_000 || value > 3_600_000))) {
    throw new ConfigError(`V1_RETRY_GRACE_MS must be 0 or an integer from 1000 to 3600000, got "${raw}"`);
  }
  return value;
}

/** A number from 0 to 1 (a fraction), e.g. SIM_LATENCY_JITTER. */
function fraction(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || value > 1) {
    throw new ConfigError(`${name} must be a number from 0 to 1, got "${raw}"`);
  }
  return value;
}

function oneOf<T extends string>(
  env: NodeJS.ProcessEnv,
  name: string,
  allowed: readonly T[],
  fallback: T,
): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

function origins(raw: string | undefined): string[] {
  const list = (raw ?? '')
    .split(',')
    .map((s) => s.trim().replace(/\/$/, ''))
    .filter(Boolean);
  for (const origin of list) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = null;
    }
    if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
      throw new ConfigError(`CORS_ORIGINS: "${origin}" is not an origin like https://app.example.com`);
    }
  }
  return list;
}

const HOST_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;
const BRACKETED_IPV6 = /^\[[0-9a-f:.]+\]$/;

function hostNames(raw: string | undefined): string[] {
  const names = (list(raw) ?? []).map((s) => s.toLowerCase());
  for (const name of names) {
    if (!HOST_NAME.test(name) && !BRACKETED_IPV6.test(name)) {
      throw new ConfigError(
        `ALLOWED_HOSTS: "${name}" is not a host name like conclave.lan or 192.168.1.10 (no scheme, port or wildcard)`,
      );
    }
  }
  return names;
}

const SIMULATED_ROSTER = ['sim/athena', 'sim/hermes', 'sim/apollo'];
const SIMULATED_CHAIRMAN = 'sim/chairman';
const HOSTED_ROSTER = ['openai/gpt-4o-mini', 'anthropic/claude-3.5-haiku', 'google/gemini-2.0-flash-001'];
const HOSTED_CHAIRMAN = 'anthropic/claude-3.5-haiku';
/** 03-jury.md DEFAULT_JURY_CONFIG; without a real provider these names are answered by the simulator. */
const JURY_JURORS = ['anthropic/claude-opus-4-6', 'openai/o3', 'google/gemini-2.5-pro'];
const JURY_FOREMAN = 'perplexity/sonar-pro';
/** 04-debate.md DEFAULT_DEBATE_CONFIG. */
const DEBATE_MODELS = ['anthropic/claude-opus-4-6', 'openai/o3', 'google/gemini-2.5-pro'];
/** 05-delphi.md gives no defaults; these follow its examples. */
const DELPHI_PANELISTS = [
  'anthropic/claude-opus-4-6',
  'openai/o3',
  'google/gemini-2.5-pro',
  'perplexity/sonar-pro',
];
const DELPHI_FACILITATOR = 'anthropic/claude-sonnet-4';

export function loadConfig(env: NodeJS.ProcessEnv = process.env): ConclaveConfig {
  const nodeEnv = env.NODE_ENV ?? 'development';
  const realProviderConfigured = Boolean(env.OPENROUTER_API_KEY || env.OPENAI_BASE_URL);
  const workerConcurrency = int(env, 'WORKER_CONCURRENCY', 16, 1);
  const authRaw = env.AUTH_MODE ?? 'apikey';
  if (authRaw !== 'apikey' && authRaw !== 'none') {
    throw new ConfigError(`AUTH_MODE must be "apikey" or "none", got "${authRaw}"`);
  }
  if (nodeEnv === 'production' && authRaw === 'none') {
    throw new ConfigError('AUTH_MODE=none (single-user mode) is refused when NODE_ENV=production');
  }
  const councilModels =
    list(env.DEFAULT_COUNCIL_MODELS) ?? (realProviderConfigured ? HOSTED_ROSTER : SIMULATED_ROSTER);
  const chairmanModel =
    env.DEFAULT_CHAIRMAN_MODEL ?? (realProviderConfigured ? HOSTED_CHAIRMAN : SIMULATED_CHAIRMAN);
  const defaults: ModeDefaults = {
    timeoutMs: int(env, 'MODEL_TIMEOUT_MS', 120_000, 1),
    council: { councilModels, chairmanModel },
    jury: {
      jurorModels: list(env.DEFAULT_JURY_MODELS) ?? JURY_JURORS,
      foremanModel: env.DEFAULT_JURY_FOREMAN ?? JURY_FOREMAN,
    },
    debate: { models: list(env.DEFAULT_DEBATE_MODELS) ?? DEBATE_MODELS },
    delphi: {
      panelistModels: list(env.DEFAULT_DELPHI_PANELISTS) ?? DELPHI_PANELISTS,
      facilitatorModel: env.DEFAULT_DELPHI_FACILITATOR ?? DELPHI_FACILITATOR,
    },
    // 02-vote.md gives no defaults: the debate roster, the same kind of panel.
    vote: { models: list(env.DEFAULT_VOTE_MODELS) ?? DEBATE_MODELS },
  };
  checkDefaults(defaults);
  return {
    nodeEnv,
    port: int(env, 'PORT', 3000),
    databaseUrl: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/conclave',
    database: parseDatabaseSettings(env),
    databaseConnectTimeoutMs: int(env, 'DATABASE_CONNECT_TIMEOUT_MS', 10_000, 0),
    ...parseRedisSettings(env),
    authMode: authRaw,
    bodyLimit: env.BODY_LIMIT ?? '256kb',
    batchBodyLimit: env.BATCH_BODY_LIMIT ?? '64mb',
    webDir: env.WEB_DIR ?? 'dist/web',
    defaults,
    deliberationCapMs: int(env, 'DELIBERATION_CAP_MS', 600_000, 1),
    simulator: {
      latencyMs: int(env, 'SIM_LATENCY_MS', 600),
      latencyJitter: fraction(env, 'SIM_LATENCY_JITTER', 0.5),
      streamPieces: int(env, 'SIM_STREAM_PIECES', 20, 1),
      seed: env.SIM_SEED ?? 'conclave',
    },
    worker: {
      concurrency: workerConcurrency,
      dbPoolSize: int(env, 'WORKER_DB_POOL', Math.min(Math.max(workerConcurrency, 5), 20), 1),
      lockDurationMs: int(env, 'WORKER_LOCK_MS', 5000, 1000),
      stalledIntervalMs: int(env, 'WORKER_STALLED_INTERVAL_MS', 2000, 500),
      heartbeatMs: int(env, 'WORKER_HEARTBEAT_MS', 1000, 100),
      maxStalledCount: int(env, 'WORKER_MAX_STALLED', 5, 1),
      attempts: int(env, 'STAGE_ATTEMPTS', 3, 1),
      reconcileIntervalMs: int(env, 'RECONCILE_INTERVAL_MS', 30_000, 100),
      reconcileIdleMs: int(env, 'RECONCILE_IDLE_MS', 30_000, 0),
      httpPort: int(env, 'WORKER_HTTP_PORT', 3001),
      shutdownTimeoutMs: int(env, 'WORKER_SHUTDOWN_TIMEOUT_MS', 150_000, 0),
      storeHoldMs: int(env, 'STORE_HOLD_MS', 60_000, 0),
      storeHoldBytes: int(env, 'STORE_HOLD_BYTES', 64 * 1024 * 1024, 0),
    },
    realProviderConfigured,
    modelCatalogue: {
      openrouter: env.OPENROUTER_API_KEY
        ? { apiKey: env.OPENROUTER_API_KEY, baseUrl: env.OPENROUTER_BASE_URL || OPENROUTER_DEFAULT_BASE_URL }
        : null,
      openaiCompatible: env.OPENAI_BASE_URL
        ? {
            baseUrl: env.OPENAI_BASE_URL,
            apiKey: env.OPENAI_API_KEY || 'not-needed',
            modelPrefix: env.OPENAI_MODEL_PREFIX || 'local',
          }
        : null,
      refreshMs: int(env, 'MODEL_CATALOGUE_REFRESH_MS', 3_600_000, 100),
      timeoutMs: int(env, 'MODEL_CATALOGUE_TIMEOUT_MS', 10_000, 100),
    },
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    metricsToken: parseMetricsToken(env.METRICS_TOKEN),
    providerLimits: parseProviderLimits(env.PROVIDER_LIMITS),
    abuse: {
      requestsPerMinute: int(env, 'RATE_LIMIT_REQUESTS_PER_MINUTE', 600, 0),
      deliberationsPerMinute: int(env, 'RATE_LIMIT_DELIBERATIONS_PER_MINUTE', 60, 0),
      batchItemsPerHour: int(env, 'RATE_LIMIT_BATCH_ITEMS_PER_HOUR', 20_000, 0),
      authFailuresPerMinute: int(env, 'AUTH_FAILURES_PER_MINUTE', 30, 0),
      trustProxyHops: int(env, 'TRUST_PROXY_HOPS', 0, 0),
      activeBatchesPerUser: int(env, 'MAX_ACTIVE_BATCHES_PER_USER', 10, 1),
    },
    streams: {
      maxSocketsPerUser: int(env, 'MAX_SOCKETS_PER_USER', 20, 0),
      maxSseStreamsPerUser: int(env, 'MAX_SSE_STREAMS_PER_USER', 20, 0),
      maxSubscriptionsPerUser: int(env, 'MAX_SUBSCRIPTIONS_PER_USER', 100, 0),
      maxBufferedBytes: int(env, 'STREAM_MAX_BUFFERED_BYTES', 4 * 1024 * 1024, 65_536),
      drainTimeoutMs: int(env, 'STREAM_DRAIN_TIMEOUT_MS', 30_000, 100),
      keyRecheckMs: int(env, 'STREAM_KEY_RECHECK_MS', 5_000, 100),
    },
    reports: {
      slots: int(env, 'REPORT_SLOTS', 1, 1),
      queuePerUser: int(env, 'REPORT_QUEUE_PER_USER', 4, 0),
      queueTotal: int(env, 'REPORT_QUEUE_TOTAL', 50, 0),
      cacheBytes: int(env, 'REPORT_CACHE_MB', 32, 0) * 1024 * 1024,
    },
    v1: { retryGraceMs: retryGrace(env) },
    corsOrigins: origins(env.CORS_ORIGINS),
    allowedHosts: hostNames(env.ALLOWED_HOSTS),
    publicUrl: parsePublicUrl(env.PUBLIC_URL),
    mcp: { progressIntervalMs: int(env, 'MCP_PROGRESS_INTERVAL_MS', 5_000, 50) },
    lifecycle: parseLifecycleSettings(env),
  };
}
