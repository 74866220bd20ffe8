import { listeningBase } from './public-url';

describe('links without PUBLIC_URL: the listening address', () => {
  it('names localhost for a wildcard bind, the address otherwise', () => {
    expect(listeningBase({ address: '0.0.0.0', family: 'IPv4', port: 3000 })).toBe('http://localhost:3000');
    expect(listeningBase({ address: '::', family: 'IPv6', port: 3000 })).toBe('http://localhost:3000');
    expect(listeningBase({ address: '127.0.0.1', family: 'IPv4', port: 4100 })).toBe('http://127.0.0.1:4100');
    expect(listeningBase({ address: '::1', family: 'IPv6', port: 4100 })).toBe('http://[::1]:4100');
    expect(listeningBase(null)).toBe('http://localhost');
  });
});
