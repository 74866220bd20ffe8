export * from './modes';
export * from './council';
export * from './events';
export * from './jobs';
export * from './model-id';
export * from './jury';
export * from './debate';
export * from './delphi';
