export * from './plan';
export * from './run';
export {
  createEventPartition,
  ensureEventPartitions,
  listEventPartitions,
  type Queryable,
} from './event-partitions';
