import type { ModeDescription, ModelsResponse } from '@conclave/contracts';
import { ModelPicker } from './model-picker';

type Role = ModeDescription['roster'][number];

/** A roster input's models: comma or space separated. */
export const modelsIn = (raw: string | undefined): string[] => (raw ?? '').split(/[\s,]+/).filter(Boolean);

/** The label of a role's field: "council (2–6 models)", "chairman (one model)". */
export const roleLabel = (role: Role): string =>
  `${role.role} ${role.max > 1 ? `(${role.min}–${role.max} models)` : '(one model)'}`;

/**
 * One role's models, chosen in the model picker (a list of what exists, free text still allowed).
 * The form keeps each role as text ("a, b, c"), as it sends and checks it.
 */
export function RosterField({
  role,
  value,
  placeholder,
  error,
  catalogue,
  onChange,
}: {
  role: Role;
  value: string;
  placeholder: string;
  error?: string;
  /** The model list (`useModelCatalogue`), fetched once for every field; null until it arrives. */
  catalogue: ModelsResponse | null;
  onChange: (value: string) => void;
}) {
  const label = roleLabel(role);
  if (role.max > 1) {
    const ids = modelsIn(value);
    return (
      <ModelPicker
        multiple
        label={label}
        name={role.field}
        value={ids}
        min={role.min}
        max={role.max}
        placeholder={ids.length === 0 && placeholder ? `default: ${placeholder}` : undefined}
        error={error}
        catalogue={catalogue}
        onChange={(next) => onChange(next.join(', '))}
      />
    );
  }
  return (
    <ModelPicker
      label={label}
      name={role.field}
      value={value}
      placeholder={placeholder ? `default: ${placeholder}` : undefined}
      error={error}
      catalogue={catalogue}
      onChange={onChange}
    />
  );
}
