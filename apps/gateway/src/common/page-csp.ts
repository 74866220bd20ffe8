/**
 * The Content-Security-Policy of the HTML pages the gateway serves from other packages (the OpenAPI
 * UI at /api/docs, Bull Board and the sign-in form under /admin): scripts only from this origin and
 * never inline; their inline `<style>` and style attributes need 'unsafe-inline' for styles; nothing
 * from another origin (a web-font stylesheet elsewhere is refused: the page falls back to a system font).
 */
export const THIRD_PARTY_PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');
