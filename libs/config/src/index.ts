export * from './config';
export * from './provider-limits';
export * from './metrics-settings';
export * from './redis-settings';
export * from './database-settings';
export * from './retention-settings';
export * from './public-url';
