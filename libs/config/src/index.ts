export * from './config';
export * from './provider-limits';
