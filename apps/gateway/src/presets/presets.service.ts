import { Injectable } from '@nestjs/common';
import { PRESET_NAME_PATTERN, PRESET_NAME_RULE, PRESETS_PER_USER, type Preset } from '@conclave/contracts';
import { modeFacts, type FieldErrors } from '@conclave/deliberation';
import { PresetsRepository, type NewPreset } from '@conclave/persistence';
import { ApiError } from '../common/api-error';
import { RequestValidator } from '../deliberations/request-validator';
import { mergePreset } from './apply-preset';

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const absent = (value: unknown): boolean => value === undefined || value === null;

/** Top-level request fields that belong to each deliberation, not to a preset, and why. */
const NOT_IN_A_PRESET: Record<string, string> = {
  question:
    'question is not part of a preset: a preset keeps the mode, roster and options; send the question with each deliberation',
  content:
    "content is not part of a preset: send jury's content to evaluate (modeConfig.content) with each deliberation",
  conversationId:
    'conversationId is not part of a preset: send it with the follow-up that continues the conversation',
  preset: 'a preset cannot name another preset',
  expected: 'expected is not part of a preset: send the expected answer with each deliberation',
  grader:
    "grader is not part of a preset: send it with the expected answer of each deliberation (or in a batch's defaults)",
};

/** `modeConfig` fields that are the material of one deliberation (jury's), and why they are refused. */
const CONTENT_OPTIONS: Record<string, string> = {
  content: 'modeConfig.content is not part of a preset: send the content to evaluate with each deliberation',
  originalQuestion:
    'modeConfig.originalQuestion is not part of a preset: send it with the content it belongs to',
};

/** "preset <name>" for a 404, the name left out when it cannot be one (it could be anything). */
const presetNamed = (name: string): string =>
  typeof name === 'string' && PRESET_NAME_PATTERN.test(name) ? `preset ${name}` : 'preset';

/** What stands in for the question (and jury's content) while a preset is validated as a request. */
const PLACEHOLDER = 'preset';

export type PresetCheck = { ok: true; preset: NewPreset } | { ok: false; fields: FieldErrors };

/** A request body with its preset applied, or the fields that stop it. */
export type PresetResolution = { ok: true; body: unknown } | { ok: false; fields: FieldErrors };

/**
 * Each user's presets: a saved mode, roster and options. A preset is validated by the same
 * RequestValidator as a deliberation request (same field names, bounds and messages), its
 * question and jury's content stood in for, since they are not part of it.
 */
@Injectable()
export class PresetsService {
  constructor(
    private readonly presets: PresetsRepository,
    private readonly validator: RequestValidator,
  ) {}

  list(userId: string): Promise<Preset[]> {
    return this.presets.list(userId);
  }

  /** The user's preset of that name; null when there is none (or the name cannot be one). */
  async find(userId: string, name: string): Promise<Preset | null> {
    if (typeof name !== 'string' || !PRESET_NAME_PATTERN.test(name)) return null;
    return this.presets.find(userId, name);
  }

  /** The user's preset of that name, or a 404. */
  async get(userId: string, name: string): Promise<Preset> {
    const preset = await this.find(userId, name);
    if (!preset) throw ApiError.notFound(presetNamed(name));
    return preset;
  }

  /**
   * `POST /api/presets`: creates the preset or replaces the user's preset of that name (`created`
   * tells which). 400 naming every bad field; 409 when a new name would pass PRESETS_PER_USER.
   */
  async save(userId: string, body: unknown): Promise<{ preset: Preset; created: boolean }> {
    const checked = await this.check(body);
    if (!checked.ok) throw ApiError.invalid(checked.fields);
    const saved = await this.presets.save(userId, checked.preset, PRESETS_PER_USER);
    if ('full' in saved) {
      throw new ApiError(
        409,
        `You have ${saved.limit} presets, the most one user keeps: delete one first, or save under an existing name to replace that preset`,
      );
    }
    return saved;
  }

  async delete(userId: string, name: string): Promise<void> {
    const deleted = PRESET_NAME_PATTERN.test(name) && (await this.presets.delete(userId, name));
    if (!deleted) throw ApiError.notFound(presetNamed(name));
  }

  /** A preset body checked: every offending field named, as a deliberation request's would be. */
  async check(body: unknown): Promise<PresetCheck> {
    if (!isPlainObject(body))
      return { ok: false, fields: { body: 'the request body must be a JSON object' } };
    // A Map, so that a field named `__proto__` is reported like any other.
    const fields = new Map<string, string>();
    const { name, ...request } = body;
    if (absent(name)) fields.set('name', `name is required; ${PRESET_NAME_RULE}`);
    else if (typeof name !== 'string' || !PRESET_NAME_PATTERN.test(name))
      fields.set('name', PRESET_NAME_RULE);
    for (const [field, why] of Object.entries(NOT_IN_A_PRESET)) {
      if (Object.hasOwn(request, field)) {
        fields.set(field, why);
        delete request[field];
      }
    }
    // Of the wrong type, it is left as it is, for the validator to name.
    let modeConfig: unknown = request.modeConfig;
    if (isPlainObject(request.modeConfig)) {
      const options = { ...request.modeConfig };
      for (const [option, why] of Object.entries(CONTENT_OPTIONS)) {
        if (Object.hasOwn(options, option)) {
          fields.set(`modeConfig.${option}`, why);
          delete options[option];
        }
      }
      modeConfig = options;
    }
    // Validated as the request it stands for: the question, and jury's content, stood in for.
    const standIn: Record<string, unknown> = { ...request, question: PLACEHOLDER };
    if (absent(modeConfig)) delete standIn.modeConfig;
    else standIn.modeConfig = modeConfig;
    const contentField =
      typeof request.mode === 'string' ? (modeFacts(request.mode)?.contentField ?? null) : null;
    const juryContent = contentField !== null && (absent(modeConfig) || isPlainObject(modeConfig));
    if (juryContent)
      standIn.modeConfig = { ...(isPlainObject(modeConfig) ? modeConfig : {}), [contentField]: PLACEHOLDER };
    const outcome = await this.validator.validate(standIn);
    if (!outcome.ok) {
      for (const [field, message] of Object.entries(outcome.fields)) {
        if (field === 'question' || (juryContent && field === `modeConfig.${contentField}`)) continue;
        if (!fields.has(field)) fields.set(field, message);
      }
    }
    if (fields.size > 0 || !outcome.ok) return { ok: false, fields: Object.fromEntries(fields) };
    const preset: NewPreset = { name: name as string, mode: outcome.request.mode };
    if (isPlainObject(modeConfig) && Object.keys(modeConfig).length > 0) preset.modeConfig = modeConfig;
    if (!absent(request.councilModels)) preset.councilModels = request.councilModels as string[];
    if (!absent(request.chairmanModel)) preset.chairmanModel = request.chairmanModel as string;
    return { ok: true, preset };
  }

  /**
   * A deliberation request with its `preset` applied (mergePreset), or the fields that stop it:
   * `preset` when the user has none of that name, `mode` when the request's differs. A body
   * without `preset` (or not an object) comes back as it is. `cache` spares a batch's items a
   * lookup each.
   */
  async resolve(
    userId: string,
    body: unknown,
    cache?: Map<string, Preset | null>,
  ): Promise<PresetResolution> {
    if (!isPlainObject(body) || !Object.hasOwn(body, 'preset')) return { ok: true, body };
    const name = body.preset;
    if (absent(name)) {
      const { preset: _none, ...request } = body;
      return { ok: true, body: request };
    }
    if (typeof name !== 'string' || !PRESET_NAME_PATTERN.test(name)) {
      return {
        ok: false,
        fields: { preset: 'preset must be the name of one of your presets (see GET /api/presets)' },
      };
    }
    let preset = cache?.get(name);
    if (preset === undefined) {
      preset = await this.presets.find(userId, name);
      cache?.set(name, preset);
    }
    if (!preset) return { ok: false, fields: { preset: `no preset named "${name}"` } };
    return mergePreset(preset, body);
  }

  /** `resolve`, a refusal thrown as the 400 naming its fields. */
  async applyTo(userId: string, body: unknown): Promise<unknown> {
    const merged = await this.resolve(userId, body);
    if (!merged.ok) throw ApiError.invalid(merged.fields);
    return merged.body;
  }
}
