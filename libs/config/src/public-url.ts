import { ConfigError } from './errors';

/**
 * PUBLIC_URL: where users reach this gateway (its web client), the base of every link an answer
 * carries (`/v1`'s `conclave.url`, MCP's `links.web`). Links never come from a request's Host or
 * X-Forwarded-* headers, which any client sets. Null when unset: the gateway then links to its own
 * listening address (gateway/common/public-url.ts).
 *
 * An absolute http(s) URL, optionally with a path (a proxy that serves Conclave under a prefix), no
 * credentials, query or fragment; returned without its trailing slash. The value is not echoed in
 * the error: a mistyped URL may carry credentials.
 */
export function parsePublicUrl(raw: string | undefined): string | null {
  if (raw === undefined || raw.trim() === '') return null;
  let url: URL | null = null;
  try {
    url = new URL(raw.trim());
  } catch {
    url = null;
  }
  const problem =
    url === null || !/^https?:$/.test(url.protocol) || !url.hostname
      ? 'must be an absolute http:// or https:// URL'
      : url.username || url.password
        ? 'must not carry a user name or password'
        : url.search || raw.includes('?')
          ? 'must not have a query (?…)'
          : url.hash || raw.includes('#')
            ? 'must not have a fragment (#…)'
            : null;
  if (problem !== null || url === null) {
    throw new ConfigError(
      `PUBLIC_URL ${problem ?? 'is not a URL'}, like https://conclave.example.com or https://example.com/conclave`,
    );
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}
