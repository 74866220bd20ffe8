export * from './final-text';
export { escapeMarkdown, table as markdownTable } from './markdown';
export * from './outcome.types';
export * from './outcome';
export * from './outcome-schema';
export * from './summary';
export * from './transcript';
export * from './shortfall';
export { ANONYMOUS_PANELIST } from './roles';
