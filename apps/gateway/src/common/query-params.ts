import {
  Injectable,
  SetMetadata,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FieldErrors } from '@conclave/deliberation';
import { validate, type ValidationError } from 'class-validator';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import { knownProperties } from '../deliberations/request-validator';
import { ApiError } from './api-error';

const QUERY_PARAMS = 'conclave:query-params';

/**
 * The query parameters a route takes, as a class-validator schema (every property a string, as a
 * query carries it; the handler still reads their values). A route without one takes none.
 */
export const QueryParams = (schema: new () => object): MethodDecorator & ClassDecorator =>
  SetMetadata(QUERY_PARAMS, schema);

/** The query schema declared for a handler (or its controller); undefined: it takes no parameter. */
export const querySchemaOf = (
  reflector: Reflector,
  handler: object,
  controller: object,
): (new () => object) | undefined =>
  reflector.getAllAndOverride<new () => object>(QUERY_PARAMS, [
    handler as () => void,
    controller as new () => object,
  ]);

function flatten(errors: ValidationError[], into: FieldErrors): FieldErrors {
  for (const error of errors)
    if (error.constraints) into[error.property] = Object.values(error.constraints).join('; ');
  return into;
}

/**
 * What is wrong with a request's query against a route's schema, by parameter: unknown ones
 * (`format[]=…` and `a[b]=…` are named by their base name), any given twice or as a list, and
 * whatever the schema says of the values. Empty when the query is fine.
 */
export async function queryErrors(
  schema: (new () => object) | undefined,
  query: Record<string, unknown>,
): Promise<FieldErrors> {
  const known = schema ? knownProperties(schema) : new Set<string>();
  const takes = known.size > 0 ? `this route takes ${[...known].join(', ')}` : 'this route takes none';
  const fields: [string, string][] = [];
  const values: Record<string, string> = {};
  for (const key of Object.keys(query)) {
    const value = query[key];
    const bracket = key.indexOf('[');
    const name = (bracket > 0 ? key.slice(0, bracket) : key).slice(0, 100);
    if (!known.has(name)) fields.push([name, `unknown query parameter (${takes})`]);
    else if (bracket > 0 || typeof value !== 'string')
      fields.push([name, `${name} must be given once, as a single value (not a list or object)`]);
    else values[name] = value;
  }
  if (schema && Object.keys(values).length > 0) {
    // Only known names, onto a fresh instance (as bodies are checked: request-validator.ts).
    const instance = Object.assign(new schema(), values);
    const errors = await validate(instance, { stopAtFirstError: true });
    fields.push(...Object.entries(flatten(errors, {})).filter(([key]) => key in values));
  }
  return Object.fromEntries(fields);
}

/**
 * Every HTTP route's query checked like a body, after its guards (authentication and the request
 * limit come first) and before its handler: a 400 naming each offending parameter.
 */
@Injectable()
export class QueryParamsInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    if (context.getType() === 'http') {
      const request = context.switchToHttp().getRequest<Request>();
      const schema = querySchemaOf(this.reflector, context.getHandler(), context.getClass());
      const fields = await queryErrors(schema, (request.query ?? {}) as Record<string, unknown>);
      if (Object.keys(fields).length > 0) throw ApiError.invalid(fields);
    }
    return next.handle();
  }
}
