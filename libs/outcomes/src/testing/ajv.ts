import { dirname } from 'node:path';

export type Validate = ((data: unknown) => boolean) & {
  errors?: { instancePath: string; message?: string }[] | null;
};

/**
 * A JSON Schema validator from the ajv 8 the MCP SDK ships (tests only): `draft7` is the SDK's
 * default (what MCP clients check structuredContent with), `2020` the dialect tool schemas declare.
 */
export function compileSchema(schema: object, dialect: 'draft7' | '2020' = '2020'): Validate {
  const sdk = dirname(require.resolve('@modelcontextprotocol/sdk/server/mcp.js'));
  const entry = dialect === '2020' ? 'ajv/dist/2020' : 'ajv';
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Ajv = require(require.resolve(entry, { paths: [sdk] })).default;
  return new Ajv({ strict: true, allErrors: true }).compile(schema) as Validate;
}
