import { issueSessionId, sessionIdValid } from './sessions';

describe('MCP session ids', () => {
  it('are accepted for the user and key they were issued to, and no other', () => {
    const id = issueSessionId('user-a', 'ck_alice');
    expect(id).toMatch(/^[\x21-\x7e]{66}$/);
    expect(issueSessionId('user-a', 'ck_alice')).not.toBe(id);
    expect(sessionIdValid(id, 'user-a', 'ck_alice')).toBe(true);
    expect(sessionIdValid(id, 'user-b', 'ck_alice')).toBe(false);
    expect(sessionIdValid(id, 'user-a', 'ck_bob')).toBe(false);
    expect(sessionIdValid(id, 'user-a', undefined)).toBe(false);
  });

  it('refuses altered and made-up values', () => {
    const id = issueSessionId('user-a', 'ck_alice');
    // Every variant of the last character (some differ only in bits base64 decoding ignores).
    for (const last of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_') {
      if (last !== id.at(-1))
        expect(sessionIdValid(id.slice(0, -1) + last, 'user-a', 'ck_alice')).toBe(false);
    }
    // Another first character (one that differs: an id starting with 'x' made `x…` the id itself).
    const first = id.startsWith('x') ? 'y' : 'x';
    expect(sessionIdValid(`${first}${id.slice(1)}`, 'user-a', 'ck_alice')).toBe(false);
    for (const forged of ['', 'anything', '0'.repeat(66), `${id}, ${id}`])
      expect(sessionIdValid(forged, 'user-a', 'ck_alice')).toBe(false);
  });

  it('work without a key in single-user mode', () => {
    const id = issueSessionId('local', undefined);
    expect(sessionIdValid(id, 'local', undefined)).toBe(true);
    expect(sessionIdValid(id, 'local', 'ck_any')).toBe(false);
  });
});
