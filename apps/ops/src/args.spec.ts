import { flagValue } from './args';

describe('flagValue', () => {
  it('answers the word after the flag, undefined without the flag or with nothing after it', () => {
    const args = ['--user', 'alice', '--usd', '20', '--none'];
    expect(flagValue(args, '--user')).toBe('alice');
    expect(flagValue(args, '--usd')).toBe('20');
    expect(flagValue(args, '--key')).toBeUndefined();
    expect(flagValue(args, '--none')).toBeUndefined();
  });
});
