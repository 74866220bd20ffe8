import {
  batchRefusal,
  MAX_BATCH_MESSAGES,
  paramsProblem,
  protocolVersionOf,
  VERSION_WITHOUT_HEADER,
} from './envelope';

const list = (id: number) => ({ jsonrpc: '2.0', id, method: 'resources/list' });

describe('MCP envelope checks', () => {
  it('takes the protocol version from the header, else the initialize, else the default', () => {
    expect(protocolVersionOf([list(1)], '2025-11-25')).toBe('2025-11-25');
    expect(
      protocolVersionOf(
        [{ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18' } }],
        undefined,
      ),
    ).toBe('2025-06-18');
    expect(protocolVersionOf([list(1)], undefined)).toBe(VERSION_WITHOUT_HEADER);
  });

  it('refuses empty batches, batches under versions without them, and long ones', () => {
    expect(batchRefusal([], undefined)).toMatch(/empty/);
    expect(batchRefusal([list(1), list(2)], '2025-06-18')).toMatch(
      /batches are not part of MCP protocol version 2025-06-18/,
    );
    expect(batchRefusal([list(1), list(2)], '2025-11-25')).toMatch(/not part/);
    const long = Array.from({ length: MAX_BATCH_MESSAGES + 1 }, (_, i) => list(i));
    expect(batchRefusal(long, undefined)).toMatch(/at most 10 messages, this one holds 11/);
    expect(batchRefusal(long.slice(1), undefined)).toBeNull();
    expect(batchRefusal([list(1)], '2025-03-26')).toBeNull();
  });

  it('names the field of bad params, without the validator dump or the value sent', () => {
    expect(paramsProblem({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: {} })).toBe(
      'Invalid params for resources/read: params.uri is required',
    );
    expect(paramsProblem({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 42 } })).toBe(
      'Invalid params for resources/read: params.uri must be a string',
    );
    const init = paramsProblem({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: 'secret-value-<script>', capabilities: 'x' },
    });
    expect(init).toMatch(/^Invalid params for initialize: /);
    expect(init).toContain('params.capabilities must be an object');
    expect(init).toContain('params.clientInfo is required');
    expect(init).not.toContain('secret-value');
    expect(init).not.toMatch(/[[{\n]/);
    expect(
      paramsProblem({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: 'q' } }),
    ).toBe('Invalid params for tools/call: params.arguments must be an object');
    expect(paramsProblem({ jsonrpc: '2.0', id: 1, method: 'resources/read' })).toBe(
      'Invalid params for resources/read: params is required',
    );
  });

  it('leaves good params and methods it does not answer alone', () => {
    expect(
      paramsProblem({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'x' } }),
    ).toBeNull();
    expect(paramsProblem(list(1))).toBeNull();
    expect(paramsProblem({ jsonrpc: '2.0', id: 1, method: 'sampling/doSomething', params: 5 })).toBeNull();
  });
});
