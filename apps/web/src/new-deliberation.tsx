import type { DeliberationAccepted, ModeDescription, ModeName, Preset } from '@conclave/contracts';
import { useEffect, useId, useRef, useState } from 'react';
import {
  ApiFailure,
  getModes,
  newIdempotencyKey,
  retryingNote,
  retryWhileUnavailable,
  startDeliberation,
} from './api';
import { noteStarted, optionsFromConfig, rosterFromConfig, SEPARATE_OPTIONS } from './conversations';
import { isSendKey, radioGroupEnds } from './keys';
import { useModelCatalogue } from './model-picker';
import {
  deletePreset,
  listPresets,
  presetConfig,
  presetNameProblem,
  presetRequest,
  savePreset,
} from './presets';
import { ConfirmDelete } from './confirm-delete';
import { modelsIn, RosterField } from './roster-input';

export const DESCRIPTIONS: Record<ModeName, string> = {
  council: 'All models answer, rank each other anonymously, a chairman synthesizes.',
  vote: 'All models answer, then vote for the best answer; a chairman breaks ties.',
  jury: 'Jurors score existing content on five dimensions and give verdicts; a foreman reports.',
  debate: 'Models answer, see the others anonymized, revise, stand or merge, then vote.',
  delphi: 'Anonymous estimation rounds with statistics until the panel converges.',
};

const MODEL_ID = /^[a-z0-9][a-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._:@+\-/]*$/;

/** Delphi's bounds (libs/deliberation/src/modes/delphi/delphi.config.ts). */
export const DELPHI_OPTIONS = { min: 2, max: 10, maxLength: 200 } as const;
export type QuestionTypeChoice = '' | 'numeric' | 'qualitative';

type Fields = Record<string, string>;

function setPath(target: Record<string, unknown>, path: string, value: unknown) {
  const [head, ...rest] = path.split('.');
  if (rest.length === 0) target[head] = value;
  else setPath((target[head] ??= {}) as Record<string, unknown>, rest.join('.'), value);
}

/** The errors without the one of a field the user just changed. */
function withoutField(errors: Fields, field: string): Fields {
  if (!(field in errors)) return errors;
  const rest = { ...errors };
  delete rest[field];
  return rest;
}

/** The models a role gets when its field is left empty (the mode's defaults). */
function defaultModels(description: ModeDescription | undefined, field: string): string[] {
  const value = ((description?.defaults ?? {}) as Record<string, unknown>)[field.replace('modeConfig.', '')];
  if (Array.isArray(value)) return value.map(String);
  return value ? [String(value)] : [];
}

/** Delphi's answer options as the textarea holds them: one a line. */
export const optionLines = (raw: string): string[] =>
  raw
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);

/** The short form of a roster, for a follow-up's summary line: "panel: a, b · chairman: c". */
export function rosterSummary(
  description: ModeDescription | undefined,
  roster: Record<string, string>,
): string {
  return (description?.roster ?? [])
    .map((role) => {
      const given = modelsIn(roster[role.field]);
      const models = given.length > 0 ? given : defaultModels(description, role.field);
      return `${role.role}: ${models.join(', ') || 'default'}`;
    })
    .join(' · ');
}

export interface NewDeliberationProps {
  /** A follow-up in this conversation (in its mode) rather than a new deliberation. */
  conversationId?: string;
  /** The follow-up's mode: the conversation's. */
  mode?: ModeName;
  /** The previous turn's config: the follow-up starts with its roster and options. */
  previousConfig?: Record<string, unknown> | null;
  /** Why a follow-up cannot be sent yet (the last turn still runs), or null. */
  waitReason?: string | null;
  /** Called once a deliberation was accepted, before the page moves to it. */
  onStarted?: (accepted: DeliberationAccepted) => void;
}

/**
 * The form that starts a deliberation: the mode, the question (or jury's content), each role's
 * models and the mode's options. As a follow-up it shows the question first and the roster the
 * conversation had, editable.
 */
export function NewDeliberation({
  conversationId,
  mode: fixedMode,
  previousConfig,
  waitReason,
  onStarted,
}: NewDeliberationProps) {
  const followUp = conversationId !== undefined;
  const [modes, setModes] = useState<ModeDescription[]>([]);
  const [chosenMode, setMode] = useState<ModeName>(fixedMode ?? 'council');
  const mode = fixedMode ?? chosenMode;
  const [question, setQuestion] = useState('');
  const [content, setContent] = useState('');
  const [originalQuestion, setOriginalQuestion] = useState('');
  const [roster, setRoster] = useState<Record<string, string>>({});
  const [options, setOptions] = useState<Record<string, string>>({});
  const [questionType, setQuestionType] = useState<QuestionTypeChoice>('');
  const [answerOptions, setAnswerOptions] = useState('');
  const [errors, setErrors] = useState<Fields>({});
  const [busy, setBusy] = useState(false);
  // A start retried while the server is briefly away stops when the form goes away (the user went
  // elsewhere): it would otherwise start a deliberation, and navigate to it, minutes later.
  const gone = useRef(false);
  useEffect(() => {
    gone.current = false;
    return () => {
      gone.current = true;
    };
  }, []);
  const [presets, setPresets] = useState<Preset[]>([]);
  const [chosenPreset, setChosenPreset] = useState('');
  const [presetName, setPresetName] = useState('');
  const [presetError, setPresetError] = useState<string | null>(null);
  const [presetNote, setPresetNote] = useState<string | null>(null);
  const [savingPreset, setSavingPreset] = useState(false);
  /** The chosen preset's delete asks once more before it goes. */
  const [confirmingDelete, setConfirmingDelete] = useState(false);
  const formRef = useRef<HTMLFormElement>(null);
  const ids = useId();
  // A problem inside a folded section unfolds it, so that it is seen.
  useEffect(() => {
    for (const details of formRef.current?.querySelectorAll('details') ?? []) {
      if (details.querySelector('.field-error')) details.open = true;
    }
  }, [errors]);
  useEffect(() => {
    let live = true;
    getModes().then(
      (found) => live && setModes(found),
      () => undefined,
    );
    listPresets().then(
      (found) => live && setPresets(found),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, []);
  const description = modes.find((m) => m.mode === mode);
  const { catalogue } = useModelCatalogue();

  // A follow-up starts from the previous turn's roster and options, once the mode's fields are known.
  const prefilled = useRef(false);
  useEffect(() => {
    if (prefilled.current || !description || !previousConfig) return;
    prefilled.current = true;
    setRoster(rosterFromConfig(description, previousConfig));
    setOptions(optionsFromConfig(description, previousConfig));
  }, [description, previousConfig]);

  const check = (): Fields => {
    const found: Fields = {};
    if (mode !== 'jury' && !question.trim()) found.question = 'Question is required';
    if (mode === 'jury' && !content.trim()) found['modeConfig.content'] = 'Content to evaluate is required';
    const lists: Record<string, string[]> = {};
    for (const role of description?.roster ?? []) {
      const models = modelsIn(roster[role.field]);
      if (models.length === 0) continue;
      lists[role.field] = models;
      const bad = models.find((m) => !MODEL_ID.test(m));
      if (bad) found[role.field] = `"${bad}" is not a model id of the form provider/name`;
      else if (role.max > 1 && (models.length < role.min || models.length > role.max)) {
        found[role.field] = `${role.role} needs ${role.min} to ${role.max} models (got ${models.length})`;
      } else if (role.max === 1 && models.length > 1) found[role.field] = `one ${role.role} model`;
    }
    const single = (field: string) => lists[field]?.[0];
    if (
      mode === 'jury' &&
      single('modeConfig.foremanModel') &&
      lists['modeConfig.jurorModels']?.includes(single('modeConfig.foremanModel') ?? '')
    ) {
      found['modeConfig.foremanModel'] = 'Foreman model must not be one of the juror models';
    }
    if (
      mode === 'delphi' &&
      single('modeConfig.facilitatorModel') &&
      lists['modeConfig.panelistModels']?.includes(single('modeConfig.facilitatorModel') ?? '')
    ) {
      found['modeConfig.facilitatorModel'] = 'The facilitator does NOT participate as a panelist';
    }
    if (mode === 'delphi' && questionType === 'qualitative') {
      const lines = optionLines(answerOptions);
      if (lines.length > 0 && (lines.length < DELPHI_OPTIONS.min || lines.length > DELPHI_OPTIONS.max)) {
        found['modeConfig.options'] =
          `give ${DELPHI_OPTIONS.min} to ${DELPHI_OPTIONS.max} options, one a line (got ${lines.length}), or none to let the facilitator choose`;
      } else if (lines.some((line) => line.length > DELPHI_OPTIONS.maxLength)) {
        found['modeConfig.options'] = `each option must be at most ${DELPHI_OPTIONS.maxLength} characters`;
      }
    }
    return found;
  };

  /** The request the form stands for (what it sends; a preset keeps part of it). */
  const buildRequest = (): Record<string, unknown> => {
    const request: Record<string, unknown> = {
      question: mode === 'jury' ? question.trim() || 'Evaluate this content' : question,
      mode,
    };
    if (conversationId) request.conversationId = conversationId;
    for (const role of description?.roster ?? []) {
      const models = modelsIn(roster[role.field]);
      if (models.length === 0) continue;
      setPath(request, role.field, role.max === 1 ? models[0] : models);
    }
    if (mode === 'jury') {
      setPath(request, 'modeConfig.content', content);
      if (originalQuestion.trim()) setPath(request, 'modeConfig.originalQuestion', originalQuestion);
    }
    if (mode === 'delphi' && questionType) {
      setPath(request, 'modeConfig.questionType', questionType);
      const lines = optionLines(answerOptions);
      if (questionType === 'qualitative' && lines.length > 0) setPath(request, 'modeConfig.options', lines);
    }
    for (const [field, value] of Object.entries(options)) {
      if (value.trim() === '' || SEPARATE_OPTIONS.includes(field)) continue;
      const n = Number(value);
      setPath(request, `modeConfig.${field}`, Number.isNaN(n) ? value : n);
    }
    return request;
  };

  /** Fills the mode, roster and options from a saved preset; they stay editable. */
  const applyPreset = (name: string) => {
    setChosenPreset(name);
    setConfirmingDelete(false);
    setPresetNote(null);
    const preset = presets.find((p) => p.name === name);
    const target = preset && modes.find((m) => m.mode === preset.mode);
    if (!preset || !target) return;
    if (!fixedMode) setMode(preset.mode);
    const config = presetConfig(preset);
    setRoster(rosterFromConfig(target, config));
    setOptions(optionsFromConfig(target, config));
    const type = config.questionType;
    setQuestionType(type === 'numeric' || type === 'qualitative' ? type : '');
    setAnswerOptions(Array.isArray(config.options) ? config.options.map(String).join('\n') : '');
    setErrors({});
    setPresetName(preset.name);
    setPresetError(null);
    setPresetNote(null);
  };

  /** Deletes the chosen preset (the form keeps what it filled in); one already gone counts as deleted. */
  const removePreset = async () => {
    const name = chosenPreset;
    if (!name) return;
    setConfirmingDelete(false);
    try {
      await deletePreset(name);
    } catch (e) {
      if (!(e instanceof ApiFailure && e.status === 404)) {
        setPresetNote(
          e instanceof ApiFailure
            ? `Preset "${name}" was not deleted: ${e.body.message}`
            : 'Could not reach the server. Please try again.',
        );
        return;
      }
    }
    setPresets((all) => all.filter((p) => p.name !== name));
    setChosenPreset('');
    setPresetNote(`Deleted preset "${name}".`);
  };

  /** Saves the current mode, roster and options under the name given (replacing a preset of that name). */
  const saveAsPreset = async () => {
    if (savingPreset) return;
    setPresetNote(null);
    const problem = presetNameProblem(presetName);
    setPresetError(problem);
    if (problem) return;
    setSavingPreset(true);
    try {
      const saved = await savePreset(presetRequest(presetName, buildRequest()));
      const others = presets.filter((p) => p.name !== saved.name);
      setPresets([...others, saved].sort((a, b) => (a.name < b.name ? -1 : 1)));
      setChosenPreset(saved.name);
      setPresetNote(`Saved as preset "${saved.name}".`);
    } catch (e) {
      if (e instanceof ApiFailure) {
        // The panel's fields are marked where they are; the name's (or the reason) by the name.
        const { name: nameError, ...fields } = e.body.fields ?? {};
        const marked = Object.keys(fields).length > 0;
        if (marked) setErrors(fields);
        setPresetError(
          nameError ?? (marked ? 'The preset was not saved: see the fields marked.' : e.body.message),
        );
      } else setPresetError('Could not reach the server. Please try again.');
    } finally {
      setSavingPreset(false);
    }
  };

  const submit = async () => {
    if (busy || waitReason) return;
    const found = check();
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    const request = buildRequest();
    setBusy(true);
    try {
      // Asked again while the server is briefly away (503), saying so; every try carries this
      // submission's key, so one that was started after all is answered, never started twice.
      const idempotencyKey = newIdempotencyKey();
      const accepted = await retryWhileUnavailable(
        () => startDeliberation(request, idempotencyKey),
        (seconds) => setErrors({ form: retryingNote(seconds) }),
        { stopped: () => gone.current },
      );
      setErrors({});
      noteStarted(accepted);
      onStarted?.(accepted);
      if (followUp) setQuestion('');
      location.hash = `#/m/${accepted.messageId}`;
    } catch (e) {
      if (e instanceof ApiFailure) setErrors(e.body.fields ?? { form: e.body.message });
      else setErrors({ form: 'Could not reach the server. Please try again.' });
    } finally {
      setBusy(false);
    }
  };

  const error = (field: string) =>
    errors[field] ? (
      <span className="field-error" role="alert" data-field={field}>
        {errors[field]}
      </span>
    ) : null;

  const shown = new Set<string>(['question', 'form', 'modeConfig.content', 'modeConfig.originalQuestion']);
  for (const role of description?.roster ?? []) shown.add(role.field);
  for (const o of description?.options ?? []) shown.add(`modeConfig.${o.field}`);

  const questionField = (
    <label className="question-field">
      {followUp ? 'Follow-up question' : 'Question'}
      <textarea
        name="question"
        value={question}
        onChange={(e) => setQuestion(e.target.value)}
        onKeyDown={(e) => {
          if (!isSendKey(e)) return;
          e.preventDefault();
          void submit();
        }}
        rows={followUp ? 2 : 3}
        aria-describedby={`${ids}-send-hint`}
      />
      <small className="hint" id={`${ids}-send-hint`}>
        Enter sends · Shift+Enter for a new line
      </small>
      {error('question')}
    </label>
  );

  const rosterFields = (description?.roster ?? []).map((role) => (
    <div className="field roster-field" key={role.field}>
      <RosterField
        role={role}
        value={roster[role.field] ?? ''}
        placeholder={defaultModels(description, role.field).join(', ')}
        error={errors[role.field]}
        catalogue={catalogue}
        onChange={(value) => {
          setRoster((r) => ({ ...r, [role.field]: value }));
          setErrors((e) => withoutField(e, role.field));
        }}
      />
    </div>
  ));

  const optionFields = (
    <details className="options">
      <summary>Options</summary>
      {(description?.options ?? [])
        .filter((o) => !SEPARATE_OPTIONS.includes(o.field))
        .map((o) => (
          <label key={o.field}>
            {o.field} <small>{o.description}</small>
            <input
              name={`modeConfig.${o.field}`}
              value={options[o.field] ?? ''}
              placeholder={o.default === undefined ? '' : String(o.default)}
              onChange={(e) => setOptions({ ...options, [o.field]: e.target.value })}
            />
            {error(`modeConfig.${o.field}`)}
          </label>
        ))}
    </details>
  );

  // A follow-up keeps its conversation's mode: only that mode's presets fit it.
  const choosable = fixedMode ? presets.filter((p) => p.mode === fixedMode) : presets;
  const presetFields = (
    <div className="presets">
      {choosable.length > 0 && (
        <label>
          Preset
          <select
            name="preset"
            value={chosenPreset}
            onChange={(e) => applyPreset(e.target.value)}
            aria-describedby={`${ids}-preset-pick-hint`}
          >
            <option value="">None</option>
            {choosable.map((p) => (
              <option key={p.name} value={p.name}>
                {fixedMode ? p.name : `${p.name} (${p.mode})`}
              </option>
            ))}
          </select>
          <small className="hint" id={`${ids}-preset-pick-hint`}>
            Fills the {fixedMode ? '' : 'mode, '}panel and options; you can still change them.
          </small>
        </label>
      )}
      {chosenPreset && (
        <ConfirmDelete
          asking={confirmingDelete}
          onAsk={() => (setConfirmingDelete(true), setPresetNote(null))}
          onKeep={() => setConfirmingDelete(false)}
          onConfirm={() => void removePreset()}
          question={`Delete preset “${chosenPreset}”?`}
          opener="Delete preset…"
          as="span"
          className="preset-delete"
          openerClassName="secondary preset-delete"
        />
      )}

      <details className="save-preset">
        <summary>Save as preset</summary>
        <label>
          Preset name
          <input
            name="presetName"
            value={presetName}
            autoComplete="off"
            spellCheck={false}
            aria-describedby={`${ids}-preset-hint`}
            aria-invalid={presetError ? true : undefined}
            onChange={(e) => (setPresetName(e.target.value), setPresetError(null))}
            onKeyDown={(e) => {
              // Enter saves the preset here; it does not start a deliberation.
              if (e.key !== 'Enter') return;
              e.preventDefault();
              void saveAsPreset();
            }}
          />
          <small className="hint" id={`${ids}-preset-hint`}>
            Saves the {fixedMode ? '' : 'mode, '}panel and options (not the question). Lowercase letters,
            digits, “.”, “_” or “-”; an existing name is replaced.
          </small>
          {presetError && (
            <span className="field-error" role="alert" data-field="presetName">
              {presetError}
            </span>
          )}
        </label>
        <button
          type="button"
          className="secondary"
          disabled={savingPreset}
          onClick={() => void saveAsPreset()}
        >
          Save preset
        </button>
      </details>
      <span className="muted preset-note" role="status">
        {presetNote}
      </span>
    </div>
  );

  return (
    <form
      ref={formRef}
      className={followUp ? 'new-deliberation follow-up' : 'new-deliberation'}
      aria-label={followUp ? 'follow-up' : 'new deliberation'}
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      {!followUp && (
        <fieldset className="modes" aria-describedby={`${ids}-mode-description`} onKeyDown={radioGroupEnds}>
          <legend>Mode</legend>
          <div className="mode-choices">
            {modes.map((m) => (
              <label key={m.mode} className={m.mode === mode ? 'mode selected' : 'mode'}>
                <input
                  type="radio"
                  name="mode"
                  value={m.mode}
                  checked={m.mode === mode}
                  onChange={() => (setMode(m.mode), setErrors({}), setChosenPreset(''))}
                />
                <strong>{m.mode}</strong> <span className="mode-description">{DESCRIPTIONS[m.mode]}</span>
              </label>
            ))}
          </div>
          <p className="mode-summary muted" id={`${ids}-mode-description`} aria-hidden="true">
            {DESCRIPTIONS[mode]}
          </p>
        </fieldset>
      )}
      {mode === 'jury' ? (
        <>
          <label>
            Content to evaluate
            <textarea name="content" value={content} onChange={(e) => setContent(e.target.value)} rows={6} />
            {error('modeConfig.content')}
          </label>
          <label>
            Original question (optional)
            <input
              name="originalQuestion"
              value={originalQuestion}
              onChange={(e) => setOriginalQuestion(e.target.value)}
            />
            {error('modeConfig.originalQuestion')}
          </label>
          <label>
            Label for this evaluation
            <input name="question" value={question} onChange={(e) => setQuestion(e.target.value)} />
            {error('question')}
          </label>
        </>
      ) : (
        questionField
      )}
      {mode === 'delphi' && !followUp && (
        <div className="delphi-fields">
          <label>
            Question type
            <select
              name="modeConfig.questionType"
              value={questionType}
              onChange={(e) => setQuestionType(e.target.value as QuestionTypeChoice)}
            >
              <option value="">Auto: the facilitator classifies it</option>
              <option value="numeric">Numeric: a number is estimated</option>
              <option value="qualitative">Qualitative: one of a few answers is chosen</option>
            </select>
            {error('modeConfig.questionType')}
          </label>
          {questionType === 'qualitative' && (
            <label>
              Answer options (one a line, {DELPHI_OPTIONS.min}–{DELPHI_OPTIONS.max}; none to let the
              facilitator choose)
              <textarea
                name="modeConfig.options"
                rows={4}
                value={answerOptions}
                onChange={(e) => setAnswerOptions(e.target.value)}
              />
              {error('modeConfig.options')}
            </label>
          )}
        </div>
      )}
      {error('form')}
      {Object.entries(errors)
        .filter(([f]) => !shown.has(f))
        .map(([f, m]) => (
          <span key={f} className="field-error" role="alert" data-field={f}>
            {f}: {m}
          </span>
        ))}
      {waitReason && <p className="muted wait-reason">{waitReason}</p>}
      {/* The button sits with the question, above the panel: a model list open below never covers it. */}
      <div className="form-actions">
        <button type="submit" disabled={busy || Boolean(waitReason)}>
          {followUp ? 'Ask a follow-up' : 'Deliberate'}
        </button>
      </div>
      {followUp ? (
        <details className="roster-details">
          <summary>
            <span className="roster-summary">{rosterSummary(description, roster)}</span>{' '}
            <span className="muted">(change)</span>
          </summary>
          {presetFields}
          {rosterFields}
          {optionFields}
        </details>
      ) : (
        <fieldset className="panel">
          <legend>Panel</legend>
          <p className="hint">Leave a role empty for its default models.</p>
          {presetFields}
          {rosterFields}
          {optionFields}
        </fieldset>
      )}
    </form>
  );
}
