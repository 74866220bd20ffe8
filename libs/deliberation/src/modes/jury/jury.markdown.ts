import { collapseSpaces } from '../../shared/text';

/** Known section names: a bold-only line counts as a heading only when it names one of these. */
const SECTION_WORDS =
  /\b(scores?|deliberation|notes?|verdict|recommendations?|strengths?|weakness(es)?|dissent(ing)?|opinions?|analysis|summary|assessment|report|consensus)\b/i;

export function isHeading(line: string): boolean {
  if (/^ ?#{1,6} \S/.test(line)) return true;
  const bold = /^ ?\*\*([^*]+)\*\*:? ?$/.exec(line);
  return bold !== null && SECTION_WORDS.test(bold[1]);
}

/**
 * The lines a model wrote as its own: spaces collapsed, fenced code blocks and blockquotes
 * dropped (a juror quoting the content, or an example, is not stating its own scores).
 */
export function ownLines(text: string): string[] {
  const lines: string[] = [];
  let fenced = false;
  for (const line of collapseSpaces(text).split('\n')) {
    if (/^ ?(```|~~~)/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (fenced || /^ ?>/.test(line)) continue;
    lines.push(line);
  }
  return lines;
}

export interface Section {
  heading: string;
  body: string[];
  /** The heading's index in the lines; the body follows it. */
  at: number;
}

/** Every section whose heading matches, with its lines up to the next heading. */
export function sections(lines: readonly string[], heading: RegExp): Section[] {
  const found: Section[] = [];
  lines.forEach((line, i) => {
    if (!isHeading(line) || !heading.test(line)) return;
    const body: string[] = [];
    for (let next = i + 1; next < lines.length && !isHeading(lines[next]); next++) body.push(lines[next]);
    found.push({ heading: line, body, at: i });
  });
  return found;
}

const LIST_ITEM = /^ ?(?:\d+[.)]|[-*•]) (.+)$/;
const NOTHING =
  /^(none|n\/a|not applicable|no (further |additional )?(recommendations?|changes?|improvements?)( (are )?(needed|required))?)\b/i;

const stripEmphasis = (item: string) => item.replace(/^\*\*(.+?)\*\*:?$/, '$1').trim();

/** Items of a numbered or bulleted list; "None", "N/A" and the like are not items. */
export function listItems(lines: readonly string[]): string[] {
  return lines
    .map((line) => LIST_ITEM.exec(line)?.[1])
    .filter((item): item is string => item !== undefined)
    .map(stripEmphasis)
    .filter((item) => item.length > 0 && !NOTHING.test(item));
}

export const normalizeLine = (line: string): string =>
  collapseSpaces(line)
    .replace(/^[ >]+/, '')
    .trim()
    .toLowerCase();

export const contentLineSet = (content: string): Set<string> =>
  new Set(
    content
      .split('\n')
      .map(normalizeLine)
      .filter((line) => line.length >= 3),
  );

/** A section is an echo when every line of it also stands in the content under evaluation. */
export function isEcho(section: Section, contentLines: ReadonlySet<string>): boolean {
  const lines = [section.heading, ...section.body].map(normalizeLine).filter(Boolean);
  return contentLines.size > 0 && lines.every((line) => contentLines.has(line));
}
