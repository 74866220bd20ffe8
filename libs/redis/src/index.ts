export * from './connection';
export * from './stage-queue';
export * from './event-publisher';
export * from './fleet-limiter';
export * from './live-channel';
export * from './lua';
export * from './queue-watch';
