import { itemsFromCsv, parseBatch } from './batch-input';

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

describe('graded items in a batch (issue 37)', () => {
  it('reads an expected column from a CSV, leaving empty cells out', () => {
    expect(itemsFromCsv('question,expected,key\nq1,42,a\nq2,,b\n')).toEqual({
      items: [
        { question: 'q1', expected: '42', key: 'a' },
        { question: 'q2', key: 'b' },
      ],
    });
  });

  it('takes a grader among the defaults, but not an expected answer', () => {
    const items = '"items":[{"question":"q","expected":1}]';
    expect(parseBatch(JSON.parse(`{"defaults":{"grader":{"type":"numeric"}},${items}}`)).ok).toBe(true);
    const parsed = parseBatch(JSON.parse(`{"defaults":{"expected":1},${items}}`));
    expect(parsed).toEqual({
      ok: false,
      fields: { 'defaults.expected': 'each item has its own expected answer' },
    });
  });
});
