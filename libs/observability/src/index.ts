export * from './logger';
export * from './log-output';
export * from './metrics';
export * from './observed.provider';
