import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * `Mcp-Session-Id` values that prove who they were issued to, with nothing stored: a random part
 * and an HMAC-SHA256 of it and the user's id keyed by the API key the client authenticates with.
 * Any gateway replica can check one (the key arrives on every request), nobody without the key can
 * make one that passes, and one issued to another key or user, altered, or made up fails — the
 * gateway then answers 404, as the Streamable HTTP transport says for an unknown session, and the
 * client starts a new one with `initialize`. A session ends with its key (revoked or replaced).
 *
 * The session serves one purpose: it tells a user's clients apart, so a cancellation
 * (`notifications/cancelled`, McpCancellations) reaches the call it names and no other. In
 * single-user mode there is no key: the HMAC is keyed by a fixed label, so a made-up value still
 * fails, but anyone who can reach such a gateway is its one user anyway.
 */

const RANDOM_BYTES = 16;
const SINGLE_USER_KEY = 'conclave single-user mcp session';
const SESSION_ID = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

function mac(random: string, userId: string, apiKey: string | undefined): Buffer {
  return createHmac('sha256', apiKey ?? SINGLE_USER_KEY)
    .update(`mcp-session\n${userId}\n${random}`)
    .digest();
}

/** A new session id for this user and key. */
export function issueSessionId(userId: string, apiKey: string | undefined): string {
  const random = randomBytes(RANDOM_BYTES).toString('base64url');
  return `${random}.${mac(random, userId, apiKey).toString('base64url')}`;
}

/** Whether the gateway issued this session id to this user and key. */
export function sessionIdValid(sessionId: string, userId: string, apiKey: string | undefined): boolean {
  const match = SESSION_ID.exec(sessionId);
  if (!match) return false;
  // Compared as text: decoding would ignore the last character's spare bits, and so accept variants.
  const presented = Buffer.from(match[2]);
  const expected = Buffer.from(mac(match[1], userId, apiKey).toString('base64url'));
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}
