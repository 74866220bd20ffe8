export * from './data-source';
export * from './entities';
export {
  TypeOrmDeliberationStore,
  type DeliberationStoreOptions,
  type StageRowRecord,
  type StoredReplay,
} from './deliberation.store';
export * from './api-keys';
export * from './batches';
export * from './work-stops';
export * from './stop-listener';
export * from './repositories';
export * from './lifecycle';
export * from './unavailable';
export * from './unstored-calls';
