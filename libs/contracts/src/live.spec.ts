import { appendLivePiece } from './live';

describe('appendLivePiece', () => {
  it('appends a piece at its offset, once', () => {
    expect(appendLivePiece('', 0, 'Hel')).toBe('Hel');
    expect(appendLivePiece('Hel', 3, 'lo')).toBe('Hello');
    expect(appendLivePiece('Hello', 0, 'Hel')).toBe('Hello'); // a duplicate
    expect(appendLivePiece('Hello', 3, 'lo, w')).toBe('Hello, w'); // overlaps: only the new part
  });

  it('leaves out a piece after a gap, or at an offset that is not one', () => {
    expect(appendLivePiece('Hello', 9, 'x')).toBe('Hello');
    expect(appendLivePiece('Hello', -1, 'x')).toBe('Hello');
    expect(appendLivePiece('Hello', 1.5, 'x')).toBe('Hello');
  });
});
