import { withoutCredentials } from './url-credentials';

describe('withoutCredentials', () => {
  it('takes a user and password out of a URL, as a Basic value and the bare password', () => {
    const { url, basicAuth, password } = withoutCredentials(
      new URL('https://al%40ice:p%3Ass@llm.example/v1'),
    );
    expect(url.toString()).toBe('https://llm.example/v1');
    expect(basicAuth).toBe(`Basic ${Buffer.from('al@ice:p:ss').toString('base64')}`);
    expect(password).toBe('p:ss');
  });

  it('leaves a URL without them as it is, and does not change the URL it was given', () => {
    const given = new URL('http://user:secret@127.0.0.1:8080/api');
    expect(withoutCredentials(new URL('http://127.0.0.1:8080/api'))).toEqual({
      url: new URL('http://127.0.0.1:8080/api'),
      basicAuth: null,
      password: null,
    });
    expect(withoutCredentials(given).password).toBe('secret');
    expect(given.password).toBe('secret');
  });

  it('keeps a part that does not decode as it is; a user alone has no password', () => {
    const { basicAuth, password } = withoutCredentials(new URL('http://bad%E0user@host/'));
    expect(basicAuth).toBe(`Basic ${Buffer.from('bad%E0user:').toString('base64')}`);
    expect(password).toBeNull();
  });
});
