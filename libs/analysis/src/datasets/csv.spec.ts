import fc from 'fast-check';
import { CsvSyntaxError, neutraliseCell, parseCsv, writeCsv } from './csv';

const cells = (text: string) => parseCsv(text).map((r) => r.cells);

describe('parseCsv (RFC 4180)', () => {
  it('reads plain and quoted cells: separators, doubled quotes and line breaks inside quotes', () => {
    expect(cells('a,b,c\n1,"x, y","say ""hi"""\n')).toEqual([
      ['a', 'b', 'c'],
      ['1', 'x, y', 'say "hi"'],
    ]);
    expect(cells('q,a\r\n"two\r\nlines",2\r\n')).toEqual([
      ['q', 'a'],
      ['two\r\nlines', '2'],
    ]);
    expect(cells('"",x,\n')).toEqual([['', 'x', '']]);
  });

  it('takes a BOM, CRLF, LF or lone CR line ends, a last record without one, and skips blank lines', () => {
    expect(cells('\uFEFFa,b\r\n1,2')).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ]);
    expect(cells('a\r1\r\n\r\n2\n\n')).toEqual([['a'], ['1'], ['2']]);
    expect(cells('')).toEqual([]);
  });

  it('numbers each record by the line it starts on, counting line breaks inside quotes', () => {
    const records = parseCsv('h1,h2\n"a\nb\nc",1\n\nx,2\n');
    expect(records.map((r) => r.line)).toEqual([1, 2, 6]);
  });

  it('keeps formula-looking cells as the characters they are', () => {
    expect(cells('=1+1,@SUM(A1),-2,+3,"=HYPERLINK(""http://x"")"\n')).toEqual([
      ['=1+1', '@SUM(A1)', '-2', '+3', '=HYPERLINK("http://x")'],
    ]);
  });

  it.each([
    ['a,b\n"open,1\n2,3\n', 2, 2, /quoted cell is never closed/],
    ['a,b\n1,x"y\n', 2, 2, /quote inside an unquoted cell \(cell 2\)/],
    ['a,b\r\n1,2\r\n"x"y,3\r\n', 3, 3, /text after a quoted cell's closing quote \(cell 1\)/],
  ])('refuses malformed input, naming the line and record: %j', (text, line, record, message) => {
    let caught: unknown;
    try {
      parseCsv(text);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(CsvSyntaxError);
    expect(caught).toMatchObject({ line, record });
    expect((caught as CsvSyntaxError).message).toMatch(message);
  });
});

describe('writeCsv', () => {
  it('writes CRLF records, numbers bare, and neutralises formula-like text (the export rule)', () => {
    const text = writeCsv(
      ['q', 'a'],
      [
        ['=1+1', -2],
        ['say "hi", then', 3.5],
        [' @x', '+1'],
      ],
    );
    expect(text).toBe('q,a\r\n\'=1+1,-2\r\n"say ""hi"", then",3.5\r\n\' @x,\'+1\r\n');
    expect(neutraliseCell('-2')).toBe("'-2");
  });

  it('reads back what it wrote, for any text that does not look like a formula', () => {
    const safe = fc.string().filter((s) => neutraliseCell(s) === s);
    fc.assert(
      fc.property(fc.array(fc.array(safe, { minLength: 2, maxLength: 2 }), { maxLength: 5 }), (rows) => {
        const text = writeCsv(['x', 'y'], rows);
        // A record of one empty line is the only shape a blank line would hide: never written here.
        expect(cells(text)).toEqual([['x', 'y'], ...rows]);
      }),
      { numRuns: 300 },
    );
  });
});
