import { loadConfig } from '@conclave/config';
import type { PresetsRepository } from '@conclave/persistence';
import { RequestValidator } from '../deliberations/request-validator';
import { PresetsService } from './presets.service';

/** check() validates only: it never reaches the repository. */
const validator = new RequestValidator(loadConfig({ AUTH_MODE: 'none' }));
const service = new PresetsService(null as unknown as PresetsRepository, validator);

const fieldsOf = async (body: unknown) => {
  const outcome = await service.check(body);
  return outcome.ok ? {} : outcome.fields;
};
const requestFields = async (body: Record<string, unknown>) => {
  const outcome = await validator.validate(body);
  return outcome.ok ? {} : outcome.fields;
};

const seven = ['sim/a', 'sim/b', 'sim/c', 'sim/d', 'sim/e', 'sim/f', 'sim/g'];

describe('PresetsService.check', () => {
  it('fails a preset exactly as the deliberation request with the same fields fails', async () => {
    for (const fields of [
      { councilModels: seven },
      { councilModels: ['sim/a'], chairmanModel: 'nope' },
      { mode: 'jury', modeConfig: { jurorModels: ['sim/a', 'sim/b'], foremanModel: 'sim/a', timeoutMs: 1 } },
      { mode: 'delphi', modeConfig: { panelistModels: ['sim/a'], maxRounds: 99, wild: true } },
      { mode: 'vote', councilModels: ['sim/a', 'sim/b'] },
      { mode: 'nope' },
      { modeConfig: 'fast' },
      { stray: 1 },
    ]) {
      const asPreset = await fieldsOf({ name: 'p', ...fields });
      const asRequest = await requestFields({
        question: 'Q',
        ...fields,
        ...(fields.mode === 'jury' ? { modeConfig: { ...(fields.modeConfig as object), content: 'C' } } : {}),
      });
      expect(Object.keys(asRequest).length).toBeGreaterThan(0);
      expect(asPreset).toEqual(asRequest);
    }
  });

  it('accepts a jury preset without content, and keeps the fields as given (defaults applied at use)', async () => {
    expect(
      await service.check({
        name: 'jury.strict-3',
        mode: 'jury',
        modeConfig: { jurorModels: ['sim/a', 'sim/b', 'sim/c'], timeoutMs: 20_000 },
      }),
    ).toEqual({
      ok: true,
      preset: {
        name: 'jury.strict-3',
        mode: 'jury',
        modeConfig: { jurorModels: ['sim/a', 'sim/b', 'sim/c'], timeoutMs: 20_000 },
      },
    });
    expect(await service.check({ name: 'plain' })).toEqual({
      ok: true,
      preset: { name: 'plain', mode: 'council' },
    });
  });

  it("refuses a deliberation's own material, naming each field", async () => {
    const fields = await fieldsOf({
      name: 'p',
      question: 'Q',
      conversationId: 'c',
      content: 'x',
      preset: 'other',
      mode: 'jury',
      modeConfig: { content: 'C', originalQuestion: 'Q' },
    });
    expect(Object.keys(fields).sort()).toEqual([
      'content',
      'conversationId',
      'modeConfig.content',
      'modeConfig.originalQuestion',
      'preset',
      'question',
    ]);
    expect(fields.question).toMatch(/not part of a preset/);
    expect(fields['modeConfig.content']).toMatch(/send the content to evaluate with each deliberation/);
  });

  it('names a missing or unusable name, saying why slashes and spaces are not allowed', async () => {
    expect((await fieldsOf({})).name).toMatch(/^name is required/);
    for (const name of ['', 'My Preset', 'a/b', '-lead', 'x'.repeat(65), 7, 'Caps']) {
      expect((await fieldsOf({ name })).name).toMatch(
        /model id conclave\/preset\/<name>, so no slashes, spaces/,
      );
    }
    expect(await fieldsOf({ name: 'x'.repeat(64) })).toEqual({});
    expect(await fieldsOf([])).toEqual({ body: 'the request body must be a JSON object' });
  });
});
