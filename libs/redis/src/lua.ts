import { createHash } from 'node:crypto';
import type { RedisClient } from './connection';

/** A Lua script and its SHA-1, for EVALSHA. */
export interface LuaScript {
  source: string;
  sha: string;
}

export const luaScript = (source: string): LuaScript => ({
  source,
  sha: createHash('sha1').update(source).digest('hex'),
});

/**
 * EVALSHA, sending the script itself on the first NOSCRIPT (new server, or after SCRIPT FLUSH): the
 * one Lua runner (fleet limiter, rate limiter, /v1 retry grace).
 */
export async function runLua(
  redis: RedisClient,
  lua: LuaScript,
  keys: string[],
  args: (string | number)[],
): Promise<unknown> {
  try {
    return await redis.evalsha(lua.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error;
    return redis.eval(lua.source, keys.length, ...keys, ...args);
  }
}
