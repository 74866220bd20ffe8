import { createDataSource } from '@conclave/persistence';
import { withDatabase } from './database';

jest.mock('@conclave/persistence', () => ({ createDataSource: jest.fn() }));

const opened = () => {
  const steps: string[] = [];
  const dataSource = {
    initialize: jest.fn(async () => void steps.push('initialize')),
    destroy: jest.fn(async () => void steps.push('destroy')),
  };
  (createDataSource as jest.Mock).mockReturnValue(dataSource);
  return { steps, dataSource };
};

describe('withDatabase', () => {
  it("opens the DataSource, gives it to the work and destroys it after, returning the work's answer", async () => {
    const { steps, dataSource } = opened();
    const answer = await withDatabase('postgres://db', 2, async (given) => {
      steps.push(given === (dataSource as unknown) ? 'work' : 'work on another');
      return 7;
    });
    expect(answer).toBe(7);
    expect(steps).toEqual(['initialize', 'work', 'destroy']);
    expect(createDataSource).toHaveBeenCalledWith('postgres://db', 2);
  });

  it('destroys the DataSource when the work throws, and throws on', async () => {
    const { steps } = opened();
    await expect(
      withDatabase('postgres://db', 1, async () => {
        throw new Error('no user');
      }),
    ).rejects.toThrow('no user');
    expect(steps).toEqual(['initialize', 'destroy']);
  });
});
