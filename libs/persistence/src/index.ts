export * from './entities';
export * from './data-source';
export * from './deliberation.store';
export * from './api-keys';
export * from './batches';
export * from './unavailable';
