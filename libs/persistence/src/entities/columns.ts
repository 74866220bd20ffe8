import type { EntitySchemaColumnOptions } from 'typeorm';

/**
 * Column builders for what the tables declare alike, under PostgreSQL's own constraint names
 * (`<table>_pkey`, `<table>_<column>_fkey`), which the migrations created and entities.db-spec.ts
 * compares.
 */

/** `id`: a uuid the database generates, the table's primary key. */
export const generatedId = (table: string): EntitySchemaColumnOptions => ({
  type: 'uuid',
  primary: true,
  generated: 'uuid',
  primaryKeyConstraintName: `${table}_pkey`,
});

/**
 * A uuid column `column` of `table` referencing the id of `target` (an entity's name), its rows
 * deleted with the row they reference; `more`: the column's other options (nullable, part of the
 * primary key).
 */
export const cascadingReference = (
  table: string,
  column: string,
  target: string,
  more: Pick<EntitySchemaColumnOptions, 'nullable' | 'primary' | 'primaryKeyConstraintName'> = {},
): EntitySchemaColumnOptions => ({
  name: column,
  type: 'uuid',
  ...more,
  foreignKey: { target, name: `${table}_${column}_fkey`, onDelete: 'CASCADE' },
});
