export * from './config';
export * from './provider-limits';
export * from './metrics-settings';
