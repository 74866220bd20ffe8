import { Writable } from 'node:stream';
import { createLogger, redactSecrets } from './logger';

/** A logger whose JSON lines are kept in memory. */
function capture(): {
  lines: () => Record<string, unknown>[];
  text: () => string;
  logger: ReturnType<typeof createLogger>;
} {
  let out = '';
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      out += chunk.toString();
      done();
    },
  });
  const logger = createLogger('debug', 'test', destination);
  return {
    logger,
    text: () => out,
    lines: () =>
      out
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

const URL_WITH_PASSWORD = 'http://user:secretpass@llm.internal:8443/v1/chat/completions';
const PROVIDER_KEY = 'sk-or-v1-0123456789abcdef0123456789abcdef';
const CONCLAVE_KEY = 'ck_Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5';

describe('redactSecrets', () => {
  it('removes the user and password of a URL and keeps where it points', () => {
    expect(redactSecrets(`connect failed: ${URL_WITH_PASSWORD}`)).toBe(
      'connect failed: http://[redacted]@llm.internal:8443/v1/chat/completions',
    );
    expect(redactSecrets('redis://:hunter2hunter2@redis.internal:6379')).toBe(
      'redis://[redacted]@redis.internal:6379',
    );
    expect(redactSecrets('postgres://conclave:pw@db:5432/conclave and http://plain.example/v1')).toBe(
      'postgres://[redacted]@db:5432/conclave and http://plain.example/v1',
    );
  });

  it('removes bearer tokens, provider keys and Conclave API keys', () => {
    const text = redactSecrets(
      `Authorization: Bearer abc.def-123 key ${PROVIDER_KEY} and sk-proj-AbCdEf0123456789xyz user ${CONCLAVE_KEY}`,
    );
    expect(text).toBe('Authorization: Bearer [redacted] key [redacted] and [redacted] user [redacted]');
  });

  it('removes a quoted Authorization header whatever its scheme', () => {
    expect(redactSecrets('sent Authorization: Basic dXNlcjpzZWNyZXRwYXNz to the proxy')).toBe(
      'sent Authorization: Basic [redacted] to the proxy',
    );
    expect(redactSecrets('{"authorization":"tok3n-value"}')).toBe('{"authorization":"[redacted]"}');
  });

  it('leaves ordinary text alone', () => {
    const text =
      'HTTP 503 from llm.internal:8443: upstream overloaded (ECONNRESET) for local/llama3.2 in 1.5 s';
    expect(redactSecrets(text)).toBe(text);
    const prose = 'Basic authentication failed; Bearer tokens expire; key prefix ck_AbCd1';
    expect(redactSecrets(prose)).toBe(prose);
  });
});

describe('createLogger redaction', () => {
  it('redacts credentials in messages, in string fields, nested fields and errors, keeping the detail', () => {
    const { logger, lines, text } = capture();
    logger.warn(
      { stage: 'stage1', model: 'local/x' },
      `model call failed: fetch ${URL_WITH_PASSWORD} (ECONNREFUSED)`,
    );
    logger.error(
      {
        provider: { baseURL: URL_WITH_PASSWORD, apiKey: PROVIDER_KEY },
        password: 'secretpass',
        headers: { authorization: `Bearer ${CONCLAVE_KEY}` },
        err: new Error(`request to ${URL_WITH_PASSWORD} failed with key ${PROVIDER_KEY}`),
        attempts: [URL_WITH_PASSWORD],
      },
      'provider misconfigured',
    );
    logger.info(`config: OPENAI_BASE_URL=${URL_WITH_PASSWORD}`);

    const output = text();
    for (const secret of ['secretpass', PROVIDER_KEY, CONCLAVE_KEY, 'user:']) {
      expect({ secret, found: output.includes(secret) }).toEqual({ secret, found: false });
    }
    const [failed, misconfigured, configured] = lines();
    // The operator still learns where the call went and why it failed.
    expect(failed).toMatchObject({
      level: 'warn',
      stage: 'stage1',
      model: 'local/x',
      msg: 'model call failed: fetch http://[redacted]@llm.internal:8443/v1/chat/completions (ECONNREFUSED)',
    });
    expect(misconfigured).toMatchObject({
      level: 'error',
      msg: 'provider misconfigured',
      provider: { baseURL: 'http://[redacted]@llm.internal:8443/v1/chat/completions', apiKey: '[redacted]' },
      password: '[redacted]',
      headers: { authorization: '[redacted]' },
      attempts: ['http://[redacted]@llm.internal:8443/v1/chat/completions'],
    });
    expect(String((misconfigured.err as { message: string }).message)).toBe(
      'request to http://[redacted]@llm.internal:8443/v1/chat/completions failed with key [redacted]',
    );
    expect(configured.msg).toBe(
      'config: OPENAI_BASE_URL=http://[redacted]@llm.internal:8443/v1/chat/completions',
    );
  });

  it('does not change the objects it is given', () => {
    const { logger } = capture();
    const fields = { target: URL_WITH_PASSWORD, nested: { url: URL_WITH_PASSWORD } };
    logger.info(fields, 'calling');
    expect(fields).toEqual({ target: URL_WITH_PASSWORD, nested: { url: URL_WITH_PASSWORD } });
  });
});
