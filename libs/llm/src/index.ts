export * from './provider';
export * from './retry';
export * from './fleet-limits';
export * from './openai-compatible.provider';
export * from './simulated/simulated.provider';
export * from './routing.provider';
export * from './simulated/random';
export * from './simulated/directives';
