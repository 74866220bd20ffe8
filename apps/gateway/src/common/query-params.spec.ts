import 'reflect-metadata';
import { IsIn, IsOptional, IsString } from 'class-validator';
import { queryErrors } from './query-params';

class Schema {
  @IsOptional() @IsIn(['json', 'md']) format?: string;
  @IsOptional() @IsString() a?: string;
}

/** A query as Express 5's parser gives it: no prototype, repeated names as lists. */
const query = (entries: Record<string, unknown>): Record<string, unknown> =>
  Object.assign(Object.create(null) as Record<string, unknown>, entries);

describe('queryErrors', () => {
  it('accepts the declared parameters, each once', async () => {
    expect(await queryErrors(Schema, query({}))).toEqual({});
    expect(await queryErrors(Schema, query({ format: 'md', a: 'x' }))).toEqual({});
    expect(await queryErrors(undefined, query({}))).toEqual({});
  });

  it('names unknown parameters, and says which the route takes', async () => {
    const fields = await queryErrors(Schema, query({ evil: '1', format: 'md' }));
    expect(Object.keys(fields)).toEqual(['evil']);
    expect(fields.evil).toBe('unknown query parameter (this route takes format, a)');
    expect(await queryErrors(undefined, query({ x: '1' }))).toEqual({
      x: 'unknown query parameter (this route takes none)',
    });
  });

  it('refuses a declared parameter given twice, as name[] or as name[key], under its own name', async () => {
    for (const q of [{ format: ['md', 'json'] }, { 'format[]': 'md' }, { 'format[x]': 'md' }]) {
      expect(Object.keys(await queryErrors(Schema, query(q)))).toEqual(['format']);
    }
  });

  it("checks declared values with the schema's rules", async () => {
    expect(Object.keys(await queryErrors(Schema, query({ format: 'xml' })))).toEqual(['format']);
  });

  it('names keys such as __proto__ and constructor as unknown, as own fields', async () => {
    const hostile = JSON.parse('{"__proto__":"1","constructor":"2","toString[]":"3"}') as Record<
      string,
      unknown
    >;
    const fields = await queryErrors(Schema, query(hostile));
    expect(Object.keys(fields).sort()).toEqual(['__proto__', 'constructor', 'toString']);
    expect(Object.getPrototypeOf(fields)).toBe(Object.prototype);
  });
});
