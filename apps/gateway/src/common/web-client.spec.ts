import { acceptedCodings, cachePolicy, IMMUTABLE, REVALIDATE } from './web-client';

describe('Accept-Encoding negotiation', () => {
  it.each([
    ['gzip, deflate, br', ['br', 'gzip']],
    ['gzip, deflate, br, zstd', ['br', 'gzip']],
    ['gzip, deflate', ['gzip']],
    ['br', ['br']],
    ['x-gzip', ['gzip']],
    ['BR;Q=1, GZIP', ['br', 'gzip']],
    ['br;q=0.5, gzip', ['gzip', 'br']],
    ['br;q=0.8, gzip;q=0.8', ['br', 'gzip']],
    ['br;q=0, gzip', ['gzip']],
    ['br;q=0, gzip;q=0', []],
    ['br ; q=0.000', []],
    ['*', ['br', 'gzip']],
    ['*;q=0', []],
    ['gzip, *;q=0', ['gzip']],
    ['identity', []],
    ['', []],
    ['br;q=nonsense', ['br']],
  ])('%j accepts %j', (header, expected) => {
    expect(acceptedCodings(header)).toEqual(expected);
  });

  it('reads an absent header as identity only, and a repeated one as one list', () => {
    expect(acceptedCodings(undefined)).toEqual([]);
    expect(acceptedCodings(['gzip', 'br;q=0.9'])).toEqual(['gzip', 'br']);
  });
});

describe('cache policy of the built files', () => {
  it.each([
    ['/srv/web/assets/index-Dg_pkFCX.js', IMMUTABLE],
    ['/srv/web/assets/react-DpTm8By2.js', IMMUTABLE],
    ['/srv/web/assets/socket-LCin-CeK.js', IMMUTABLE],
    ['/srv/web/assets/index-BUT2So7O.css', IMMUTABLE],
    ['/srv/web/index.html', REVALIDATE],
    ['/srv/web/assets/app.js', REVALIDATE],
    ['/srv/web/favicon.svg', REVALIDATE],
    ['/srv/web/robots.txt', REVALIDATE],
    ['/srv/web/some-component.js', REVALIDATE],
    ['/srv/web/assets/../index-Dg_pkFCX.js', REVALIDATE],
    ['/srv/web/assets/nested/chart-Dg_pkFCX.js', IMMUTABLE],
  ])('%s: %s', (file, policy) => {
    expect(cachePolicy('/srv/web', file)).toBe(policy);
  });
});
