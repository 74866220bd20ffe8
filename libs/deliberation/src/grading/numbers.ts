/**
 * Numbers in free text, read by a hand-written scanner (linear in the text's length). The rules:
 * - digits with an optional decimal part (`3.5`, `.5`), thousands written with commas (`1,234.5`,
 *   `1,234,567`: a comma followed by exactly three digits), an optional exponent (`1e3`, `2.5E-4`);
 * - a sign directly before (`-3`, `+3`, the minus sign `−3`), also around a currency symbol
 *   (`-$3`, `$-3`); a hyphen glued to a word is not a sign (`COVID-19` reads 19);
 * - a currency symbol before or after (`$3`, `€3`, `3 €`) and a percent sign after (`42%`) are
 *   dropped: `42%` reads 42, so write the expected answer in the unit the answer is asked in;
 * - a fraction of two whole numbers (`3/4`) reads as its value (0.75);
 * - full-width digits and other compatibility forms are read after Unicode NFKC;
 * - a value that does not fit a double (`1e999`) is not a number.
 * Not read: words (`twelve`), spaces as thousands separators (`1 234` is 1 and 234), `1.234,5`.
 */

export interface NumberToken {
  value: number;
  /** The number as written, sign, currency and percent sign included. */
  text: string;
  start: number;
  end: number;
}

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const CURRENCY = /\p{Sc}/u;
const isCurrency = (c: string | undefined): boolean => c !== undefined && CURRENCY.test(c);
const WORD = /[\p{L}\p{N}]/u;
const isWordChar = (c: string | undefined): boolean => c !== undefined && WORD.test(c);
const isSign = (c: string | undefined): boolean => c === '-' || c === '+' || c === '−';

/** Every number in the text, in order (the text is NFKC-normalized first; positions refer to that form). */
export function readNumbers(input: string): NumberToken[] {
  const s = input.normalize('NFKC');
  const n = s.length;
  const tokens: NumberToken[] = [];
  let i = 0;
  while (i < n) {
    const c = s[i];
    const startsNumber = isDigit(c) || (c === '.' && isDigit(s[i + 1]) && !isDigit(s[i - 1]));
    if (!startsNumber) {
      i++;
      continue;
    }
    const begin = i;
    let digits = '';
    let whole = true;
    while (isDigit(s[i])) digits += s[i++];
    // Thousands: `,ddd` not followed by a further digit, only after 1–3 leading digits.
    if (digits.length >= 1 && digits.length <= 3) {
      while (
        s[i] === ',' &&
        isDigit(s[i + 1]) &&
        isDigit(s[i + 2]) &&
        isDigit(s[i + 3]) &&
        !isDigit(s[i + 4])
      ) {
        digits += s.slice(i + 1, i + 4);
        i += 4;
      }
    }
    if (s[i] === '.' && isDigit(s[i + 1])) {
      whole = false;
      digits += '.';
      i++;
      while (isDigit(s[i])) digits += s[i++];
    }
    if ((s[i] === 'e' || s[i] === 'E') && (isDigit(s[i + 1]) || (isSign(s[i + 1]) && isDigit(s[i + 2])))) {
      // An exponent only when no letter follows its digits (`2e5`, not `2e5x`: that is 2 and 5).
      let j = i + 1;
      let exponent = 'e';
      if (isSign(s[j])) exponent += s[j++] === '−' ? '-' : s[j - 1];
      while (isDigit(s[j])) exponent += s[j++];
      if (!isWordChar(s[j]) || s[j] === '%') {
        whole = false;
        digits += exponent;
        i = j;
      }
    }
    let value = Number(digits);
    // A fraction of two whole numbers.
    if (whole && s[i] === '/' && isDigit(s[i + 1])) {
      let j = i + 1;
      let denominator = '';
      while (isDigit(s[j])) denominator += s[j++];
      if (s[j] !== '.' || !isDigit(s[j + 1])) {
        const d = Number(denominator);
        if (d !== 0) {
          value = value / d;
          i = j;
        }
      }
    }
    let end = i;
    if (s[end] === '%') end++;
    else if (isCurrency(s[end])) end++;
    else if (s[end] === ' ' && isCurrency(s[end + 1])) end += 2;
    // Sign and currency before: `-3`, `−3`, `+3`, `$3`, `-$3`, `$-3`.
    let start = begin;
    let negative = false;
    const signAt = (k: number) => isSign(s[k]) && !isWordChar(s[k - 1]) && !isDigit(s[k - 1]);
    if (isCurrency(s[start - 1])) {
      start--;
      if (signAt(start - 1)) {
        start--;
        negative = s[start] !== '+';
      }
    } else if (signAt(start - 1)) {
      start--;
      negative = s[start] !== '+';
      if (isCurrency(s[start - 1])) start--;
    }
    if (Number.isFinite(value)) {
      tokens.push({ value: negative ? -value : value, text: s.slice(start, end), start, end });
    }
    i = Math.max(i, begin + 1);
  }
  return tokens;
}

/** The last number in the text; null when it has none. */
export function lastNumber(text: string): NumberToken | null {
  const tokens = readNumbers(text);
  return tokens.length > 0 ? tokens[tokens.length - 1] : null;
}

/**
 * The value of a text that is one number and nothing else (an expected answer: `1,234.5`, `$3`,
 * `42%`, `-1e3`, `3/4`), by the same rules; null for anything else (`twelve`, `3 apples`, `1 2`).
 */
export function parseNumberText(text: string): number | null {
  const s = text.normalize('NFKC').trim();
  const tokens = readNumbers(s);
  if (tokens.length !== 1) return null;
  const [token] = tokens;
  const rest = (s.slice(0, token.start) + s.slice(token.end)).trim();
  for (const c of rest) if (!isCurrency(c) && c !== ' ') return null;
  return token.value;
}
