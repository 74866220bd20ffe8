import { parseBatch } from './batch-input';

describe('parseBatch', () => {
  const valid = '"items":[{"question":"q"}]';

  it.each(['__proto__', 'constructor', 'prototype', 'evil'])(
    'refuses an unknown envelope field named %s, naming it (JSON text keeps the key as sent)',
    (key) => {
      const parsed = parseBatch(JSON.parse(`{${valid},"${key}":{"polluted":true}}`));
      expect(parsed.ok).toBe(false);
      if (parsed.ok) return;
      expect(Object.keys(parsed.fields)).toEqual([key]);
      expect(JSON.stringify(parsed.fields)).toContain(`property ${key} should not exist`);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    },
  );

  it('still accepts the envelope without them', () => {
    expect(parseBatch(JSON.parse(`{${valid}}`)).ok).toBe(true);
  });
});
