import type { SnakeCase, SnakeCased } from './row-names';

/** Compile-time checks (tsc -p tsconfig.json): a wrong column name fails the typecheck. */
const column: SnakeCase<'conversationId'> = 'conversation_id';
const single: SnakeCase<'id'> = 'id';
const row: SnakeCased<{ needsTitle: boolean; lastSeq: number; createdAt: Date }> = {
  needs_title: true,
  last_seq: 3,
  created_at: new Date(0),
};
// @ts-expect-error a camelCase key is not a column of the row
const camel: SnakeCased<{ lastSeq: number }> = { lastSeq: 3 };

describe('SnakeCased', () => {
  it('names each property as its snake_case column', () => {
    expect([column, single, Object.keys(row), camel]).toEqual([
      'conversation_id',
      'id',
      ['needs_title', 'last_seq', 'created_at'],
      { lastSeq: 3 },
    ]);
  });
});
