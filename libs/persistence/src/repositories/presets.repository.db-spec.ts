import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { scratchDatabase, type ScratchDatabase } from '../../../../test/support/database';
import { ApiKeysRepository } from './api-keys.repository';
import { PresetsRepository } from './presets.repository';

let scratch: ScratchDatabase;
let db: DataSource;
let presets: PresetsRepository;
let apiKeys: ApiKeysRepository;

beforeAll(async () => {
  scratch = await scratchDatabase({ prefix: 'conclave_r', poolSize: 8 });
  db = scratch.db;
  presets = new PresetsRepository(db);
  apiKeys = new ApiKeysRepository(db);
});

afterAll(async () => {
  await scratch?.drop();
});

const newUser = async () => (await apiKeys.createUserWithKey(`u-${randomUUID()}`, 'user')).userId;

describe('PresetsRepository', () => {
  it('creates, then replaces under the same name (createdAt kept), and keeps only the request fields', async () => {
    const userId = await newUser();
    const first = await presets.save(
      userId,
      { name: 'trio', mode: 'council', councilModels: ['sim/a', 'sim/b'], modeConfig: { timeoutMs: 9000 } },
      10,
    );
    if (!('preset' in first)) throw new Error('refused');
    expect(first.created).toBe(true);
    expect(first.preset).toEqual({
      name: 'trio',
      mode: 'council',
      councilModels: ['sim/a', 'sim/b'],
      modeConfig: { timeoutMs: 9000 },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const second = await presets.save(userId, { name: 'trio', mode: 'vote' }, 10);
    if (!('preset' in second)) throw new Error('refused');
    expect(second.created).toBe(false);
    expect(second.preset).toEqual({
      name: 'trio',
      mode: 'vote',
      createdAt: first.preset.createdAt,
      updatedAt: expect.any(String),
    });
    expect(await presets.find(userId, 'trio')).toEqual(second.preset);
    expect(await presets.list(userId)).toEqual([second.preset]);
  });

  it('is per user: another user neither finds nor deletes it', async () => {
    const [owner, other] = [await newUser(), await newUser()];
    await presets.save(owner, { name: 'mine', mode: 'council' }, 10);
    expect(await presets.find(other, 'mine')).toBeNull();
    expect(await presets.list(other)).toEqual([]);
    expect(await presets.delete(other, 'mine')).toBe(false);
    expect(await presets.delete(owner, 'mine')).toBe(true);
    expect(await presets.delete(owner, 'mine')).toBe(false);
  });

  it('lets no more than the limit through, even when the saves race', async () => {
    const userId = await newUser();
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, (_, i) => presets.save(userId, { name: `p-${i}`, mode: 'council' }, 3)),
    );
    expect(outcomes.filter((o) => 'preset' in o)).toHaveLength(3);
    expect(outcomes.filter((o) => 'full' in o)).toEqual(Array(9).fill({ full: true, limit: 3 }));
    expect(await presets.list(userId)).toHaveLength(3);
    // At the limit, a replacement is still a save.
    const [kept] = await presets.list(userId);
    const replaced = await presets.save(userId, { name: kept.name, mode: 'debate' }, 3);
    expect('preset' in replaced && replaced.created).toBe(false);
  });

  it('goes with its user, and the table refuses a name that could not be one', async () => {
    const userId = await newUser();
    await presets.save(userId, { name: 'doomed', mode: 'council' }, 10);
    await expect(presets.save(userId, { name: 'Has Space', mode: 'council' }, 10)).rejects.toThrow(
      /presets_name_check/,
    );
    await db.query('DELETE FROM users WHERE id = $1', [userId]);
    const [{ count }] = await db.query('SELECT count(*)::int AS count FROM presets WHERE user_id = $1', [
      userId,
    ]);
    expect(count).toBe(0);
  });
});
