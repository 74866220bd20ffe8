import { isModelId, MODEL_ID_MAX_LENGTH } from '@conclave/contracts';
import { ValidateBy, type ValidationOptions } from 'class-validator';

/** `provider/name`, as 00-shared.md §1 requires of every model id. */
export function IsModelId(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isModelId',
      validator: {
        validate: (value: unknown) => isModelId(value),
        defaultMessage: (args) =>
          `${args?.property ?? 'model'} must contain model ids of the form provider/name ` +
          `(e.g. anthropic/claude-opus-4-6, at most ${MODEL_ID_MAX_LENGTH} characters)`,
      },
    },
    options,
  );
}
