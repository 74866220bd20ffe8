import { ConfigError, loadConfig } from './config';

describe('ALLOWED_HOSTS (host names a single-user gateway answers to besides loopback ones)', () => {
  it('is empty by default', () => {
    expect(loadConfig({}).allowedHosts).toEqual([]);
  });

  it('reads host names, IPv4 and bracketed IPv6 addresses, in lower case', () => {
    expect(
      loadConfig({ ALLOWED_HOSTS: ' Conclave.LAN, 192.168.1.10 ,[FE80::1],my-box ' }).allowedHosts,
    ).toEqual(['conclave.lan', '192.168.1.10', '[fe80::1]', 'my-box']);
  });

  it.each(['http://conclave.lan', 'conclave.lan:3000', '*', '*.lan', 'a/b', 'fe80::1', 'bad host'])(
    'refuses "%s": a bare host name, no scheme, port or wildcard',
    (value) => {
      expect(() => loadConfig({ ALLOWED_HOSTS: value })).toThrow(ConfigError);
      expect(() => loadConfig({ ALLOWED_HOSTS: value })).toThrow(/ALLOWED_HOSTS/);
    },
  );
});
