import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isTerminalStatus, type DeliberationView } from '@conclave/contracts';
import { TestStack } from '../../../test/support/harness';
import { expectOutcomeFits } from './fixtures/expectations';
import { SCENARIOS, type Scenario } from './fixtures/scenarios';
import { outcomeOf } from './outcome';
import { sleep } from '../../../test/support/wait';

/**
 * Outcomes of real deliberations: every mode, complete, with a failed panelist, with a failed
 * final author, running and cancelled, run on the real stack with simulated models and checked
 * against DELIBERATION_OUTCOME_SCHEMA. With RECORD_OUTCOME_VIEWS=1 the views are written to
 * fixtures/views.json, the fixtures of the unit specs (then `npx prettier --write` it).
 */
describe('outcomes of real deliberations', () => {
  const stack = new TestStack();
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const view = async (id: string) =>
    (await stack.api<DeliberationView>('GET', `/api/deliberations/${id}`)).body;
  async function until(id: string, done: (v: DeliberationView) => boolean): Promise<DeliberationView> {
    for (;;) {
      const current = await view(id);
      if (done(current) || isTerminalStatus(current.status)) return current;
      await sleep(50);
    }
  }

  /** The views a scenario yields: its end, or (running) the view mid-run and after the cancel. */
  async function run(scenario: Scenario): Promise<[Scenario, DeliberationView][]> {
    const { messageId } = await stack.deliberate(scenario.body);
    if (!scenario.held) return [[scenario, await until(messageId, () => false)]];
    const running = await until(messageId, scenario.held);
    await stack.api('POST', `/api/deliberations/${messageId}/cancel`);
    const cancelled: Scenario = {
      ...scenario,
      name: scenario.name.replace('running', 'cancelled'),
      kind: 'cancelled',
    };
    return [
      [scenario, running],
      [cancelled, await until(messageId, () => false)],
    ];
  }

  it('fit the schema and say what happened, for every mode and state', async () => {
    const views = (await Promise.all(SCENARIOS.map(run))).flat();
    expect(views.map(([s]) => s.kind).sort()).toEqual(
      expect.arrayContaining(['cancelled', 'complete', 'failed-final', 'failed-panelist', 'running']),
    );
    for (const [scenario, v] of views) {
      const outcome = outcomeOf(v, {
        web: `${stack.baseUrl}/#/m/${v.messageId}`,
        transcript: `conclave://deliberations/${v.messageId}`,
      });
      try {
        expectOutcomeFits(scenario, v, outcome);
      } catch (error) {
        throw new Error(`${scenario.name}: ${(error as Error).message}`);
      }
    }
    if (process.env.RECORD_OUTCOME_VIEWS === '1') {
      const recorded = Object.fromEntries(views.map(([s, v]) => [s.name, v]));
      writeFileSync(join(__dirname, 'fixtures', 'views.json'), `${JSON.stringify(recorded, null, 1)}\n`);
    }
  }, 60_000);
});
