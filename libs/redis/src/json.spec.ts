import { readJson } from './json';
import { parseControl } from './live-channel';

describe('readJson', () => {
  it('parses JSON, and answers undefined for what is not JSON', () => {
    expect(readJson('{"a":[1,"b"]}')).toEqual({ a: [1, 'b'] });
    expect(readJson('null')).toBeNull();
    expect(readJson('0')).toBe(0);
    for (const foreign of ['', 'x', '{', '[1,', 'undefined']) expect(readJson(foreign)).toBeUndefined();
  });
});

describe('parseControl', () => {
  it('reads a cancel and a watch, and nothing else', () => {
    expect(parseControl(JSON.stringify({ type: 'cancel', messageId: 'm' }))).toEqual({
      type: 'cancel',
      messageId: 'm',
    });
    expect(parseControl(JSON.stringify({ type: 'watch', messageId: 'm', replyTo: 'g:1' }))).toEqual({
      type: 'watch',
      messageId: 'm',
      replyTo: 'g:1',
    });
    for (const foreign of [
      '',
      'nope',
      'null',
      '[]',
      '{"type":"watch","messageId":"m"}',
      '{"type":"cancel"}',
    ]) {
      expect(parseControl(foreign)).toBeNull();
    }
  });
});
