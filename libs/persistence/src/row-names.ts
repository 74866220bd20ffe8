/** `conversationId` → `conversation_id`: a column's name in SQL from its property's name. */
export type SnakeCase<Name extends string> = Name extends `${infer Head}${infer Tail}`
  ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${SnakeCase<Tail>}`
  : Name;

/** A row as PostgreSQL returns it (snake_case columns) of a camelCase record type. */
export type SnakeCased<Record> = { [K in keyof Record & string as SnakeCase<K>]: Record[K] };
