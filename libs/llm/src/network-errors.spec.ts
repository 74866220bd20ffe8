import { NETWORK_REASONS, isNetworkErrorCode, networkErrorCode } from './network-errors';
import { FAILURE_REASONS, NETWORK_ERROR_CODES } from './provider';

describe('the network-error table', () => {
  it('describes every code with a failure reason from the closed list', () => {
    for (const code of NETWORK_ERROR_CODES) {
      expect(FAILURE_REASONS).toContain(NETWORK_REASONS[code]);
    }
    expect(isNetworkErrorCode('ECONNRESET')).toBe(true);
    expect(isNetworkErrorCode('EWHATEVER')).toBe(false);
    expect(isNetworkErrorCode(undefined)).toBe(false);
  });

  it('finds a code up to five causes deep, and no deeper', () => {
    const wrapped = (depth: number): unknown => {
      let error: unknown = Object.assign(new Error('inner'), { code: 'ECONNREFUSED' });
      for (let i = 1; i < depth; i++) error = new Error('outer', { cause: error });
      return error;
    };
    expect(networkErrorCode(wrapped(5))).toBe('ECONNREFUSED');
    expect(networkErrorCode(wrapped(6))).toBeUndefined();
  });

  it("counts undici's bare 'terminated' as UND_ERR_SOCKET only when asked", () => {
    const terminated = new TypeError('terminated');
    expect(networkErrorCode(terminated, true)).toBe('UND_ERR_SOCKET');
    expect(networkErrorCode(terminated)).toBeUndefined();
    const withCode = new TypeError('terminated', { cause: { code: 'ECONNRESET' } });
    expect(networkErrorCode(withCode, true)).toBe('ECONNRESET');
  });
});
