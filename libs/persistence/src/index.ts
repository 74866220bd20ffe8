export * from './entities';
export * from './data-source';
export * from './deliberation.store';
export * from './api-keys';
export * from './queue';
export * from './batches';
export * from './fleet-limiter';
export * from './unavailable';
