import { IsString, getMetadataStorage } from 'class-validator';
import { jsonSchemaOf } from '../shared/json-schema';
import { ModeOptionsDto } from './config-kit';

class WithSeat extends ModeOptionsDto({
  timeout: { min: 1000, max: 5000, unit: 'ms' },
  timeoutType: 'integer',
  maxMembers: 4,
  fallbacks: 'seatFallbacks',
}) {
  @IsString()
  own: string;
}

class WithoutSeat extends ModeOptionsDto({
  timeout: { min: 1000, max: 5000, unit: 'ms' },
  timeoutType: 'number',
  maxMembers: 3,
}) {}

const fields = (dto: new () => object) => [
  ...new Set(
    getMetadataStorage()
      .getTargetValidationMetadatas(dto, '', true, false)
      .map((m) => m.propertyName),
  ),
];

describe('ModeOptionsDto', () => {
  it("declares the options every mode has after the mode's own fields, the seat's fallbacks last", () => {
    expect(fields(WithSeat)).toEqual(['own', 'timeoutMs', 'quorum', 'stageDeadlineMs', 'seatFallbacks']);
    expect(fields(WithoutSeat)).toEqual(['timeoutMs', 'quorum', 'stageDeadlineMs']);
  });

  it('bounds the timeout, the quorum by the panel and the fallbacks as a list of model ids', () => {
    const schema = jsonSchemaOf(WithSeat);
    expect(schema.properties?.timeoutMs).toMatchObject({ type: 'integer', minimum: 1000, maximum: 5000 });
    expect(schema.properties?.quorum).toMatchObject({ type: 'number', maximum: 4 });
    expect(schema.properties?.seatFallbacks).toMatchObject({ type: 'array', uniqueItems: true });
    expect(jsonSchemaOf(WithoutSeat).properties?.timeoutMs).toMatchObject({ type: 'number' });
    expect(schema.required).toEqual(['own']);
  });
});
