export * from './tokens';
export * from './config.module';
export * from './queue.module';
export * from './persistence.module';
export * from './observability.module';
export * from './nest-logger';
export * from './readiness';
