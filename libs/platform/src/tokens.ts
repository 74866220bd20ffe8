/** Nest injection tokens shared by the gateway and the worker. */
export const CONFIG = Symbol('CONFIG');
export const STAGE_QUEUE = Symbol('STAGE_QUEUE');
export const REDIS_PRODUCER = Symbol('REDIS_PRODUCER');
/** The one publisher of stored events to every gateway (RedisEventPublisher on REDIS_PRODUCER). */
export const EVENT_PUBLISHER = Symbol('EVENT_PUBLISHER');
export const METRICS = Symbol('METRICS');
/** The process's JSON logger (pino, @conclave/observability createLogger). */
export const LOGGER = Symbol('LOGGER');
