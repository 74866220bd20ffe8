import { loadConfig } from './config';
import { ConfigError } from './errors';
import { parsePublicUrl } from './public-url';

describe('PUBLIC_URL', () => {
  it('is unset by default: links then follow the listening address', () => {
    expect(parsePublicUrl(undefined)).toBeNull();
    expect(parsePublicUrl('  ')).toBeNull();
    expect(loadConfig({}).publicUrl).toBeNull();
  });

  it('takes an absolute http(s) URL, with a path, without its trailing slash', () => {
    expect(parsePublicUrl('https://Conclave.example.com/')).toBe('https://conclave.example.com');
    expect(parsePublicUrl('http://10.0.0.5:8080')).toBe('http://10.0.0.5:8080');
    expect(parsePublicUrl('https://example.com/conclave/')).toBe('https://example.com/conclave');
    expect(parsePublicUrl('http://[::1]:3000')).toBe('http://[::1]:3000');
    expect(loadConfig({ PUBLIC_URL: 'https://c.example' }).publicUrl).toBe('https://c.example');
  });

  it.each([
    ['conclave.example.com', 'absolute'],
    ['/conclave', 'absolute'],
    ['ftp://conclave.example.com', 'absolute'],
    ['https://conclave.example.com/?a=1', 'query'],
    ['https://conclave.example.com/?', 'query'],
    ['https://conclave.example.com/#/m', 'fragment'],
    ['https://user:secret@conclave.example.com', 'user name or password'],
  ])('refuses %s at start-up, naming the variable and never echoing it', (value, problem) => {
    expect(() => loadConfig({ PUBLIC_URL: value })).toThrow(ConfigError);
    expect(() => parsePublicUrl(value)).toThrow(new RegExp(`^PUBLIC_URL .*${problem}`));
    try {
      parsePublicUrl(value);
    } catch (error) {
      expect(String(error)).not.toContain('secret');
    }
  });
});
