import type { Preset } from '@conclave/contracts';
import type { DataSource } from 'typeorm';
import { returnedRows } from '../deliberation.store';
import { PresetEntity, type PresetRecord } from '../entities';

/** A preset as the gateway saves it: its name and mode, and its request fields (validated there). */
export type NewPreset = Omit<Preset, 'createdAt' | 'updatedAt'>;

/** What `save` did: created or replaced the preset, or nothing because the user has `limit` already. */
export type SavedPreset = { preset: Preset; created: boolean } | { full: true; limit: number };

/** The columns a preset is read with (its user is the caller's). */
const SELECT = { name: true, mode: true, request: true, createdAt: true, updatedAt: true } as const;

/** The request fields a preset keeps, in the jsonb column `request`. */
const REQUEST_FIELDS = ['modeConfig', 'councilModels', 'chairmanModel'] as const;

const toPreset = (row: Omit<PresetRecord, 'userId'>): Preset => {
  const preset: Preset = {
    name: row.name,
    mode: row.mode,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
  for (const field of REQUEST_FIELDS) {
    if (row.request[field] !== undefined) Object.assign(preset, { [field]: row.request[field] });
  }
  return preset;
};

/**
 * The `presets` table: each user's saved modes, rosters and options, by name. `save` stays SQL: its
 * count and its upsert answer with what TypeORM's API does not (bool_or, `xmax = 0` for "created").
 */
export class PresetsRepository {
  constructor(private readonly dataSource: DataSource) {}

  private get presets() {
    return this.dataSource.getRepository(PresetEntity);
  }

  /** The user's presets, by name. */
  async list(userId: string): Promise<Preset[]> {
    const rows = await this.presets.find({ select: SELECT, where: { userId }, order: { name: 'ASC' } });
    return rows.map(toPreset);
  }

  /** The user's preset of that name, or null. */
  async find(userId: string, name: string): Promise<Preset | null> {
    const row = await this.presets.findOne({ select: SELECT, where: { userId, name } });
    return row ? toPreset(row) : null;
  }

  /**
   * Creates the preset, or replaces the user's preset of that name (its `createdAt` kept). A new
   * name is refused when the user has `limit` presets already: the count is taken under a lock on
   * the user's row, so concurrent saves cannot pass it together.
   */
  async save(userId: string, preset: NewPreset, limit: number): Promise<SavedPreset> {
    const request = Object.fromEntries(
      REQUEST_FIELDS.filter((f) => preset[f] !== undefined).map((f) => [f, preset[f]]),
    );
    return this.dataSource.transaction(async (manager) => {
      // NO KEY UPDATE: other rows referencing the user (new conversations) are not held up by it.
      await manager.query('SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE', [userId]);
      const [{ count, existing }]: { count: number; existing: boolean }[] = await manager.query(
        `SELECT count(*)::int AS count, bool_or(name = $2) IS TRUE AS existing FROM presets WHERE user_id = $1`,
        [userId, preset.name],
      );
      if (!existing && count >= limit) return { full: true, limit };
      const [row] = returnedRows<Omit<PresetRecord, 'userId'> & { created: boolean }>(
        await manager.query(
          `INSERT INTO presets (user_id, name, mode, request) VALUES ($1, $2, $3, $4::jsonb)
           ON CONFLICT (user_id, name)
             DO UPDATE SET mode = EXCLUDED.mode, request = EXCLUDED.request, updated_at = now()
           RETURNING name, mode, request, created_at AS "createdAt", updated_at AS "updatedAt", (xmax = 0) AS created`,
          [userId, preset.name, preset.mode, JSON.stringify(request)],
        ),
      );
      return { preset: toPreset(row), created: row.created };
    });
  }

  /** Deletes the user's preset of that name; false when there was none. */
  async delete(userId: string, name: string): Promise<boolean> {
    const { affected } = await this.presets.delete({ userId, name });
    return (affected ?? 0) > 0;
  }
}
