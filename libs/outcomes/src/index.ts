export * from './final-text';
export * from './outcome.types';
export * from './outcome';
export * from './outcome-schema';
export * from './summary';
export * from './transcript';
