export * from './final-text';
