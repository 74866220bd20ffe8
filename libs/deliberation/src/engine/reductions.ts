import type { StageReduction } from './types';

/** A stage outcome that ends the deliberation with a message for the user and stores nothing. */
export const failure = (message: string): StageReduction => ({
  rows: [],
  events: [],
  transition: { kind: 'fail', message },
});
