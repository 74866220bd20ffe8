export * from './logger';
export * from './metrics';
export * from './observed.provider';
export * from './readiness';
