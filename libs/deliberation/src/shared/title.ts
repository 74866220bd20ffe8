import type { ChatMessage } from '@conclave/llm';
import { createFence } from './fence';

/**
 * A title prompt: what is titled (`about`), then `text` quoted and fenced as `kind` (shared/fence.ts,
 * the containment layer): a text that says "ignore the above" is still only a text to title.
 */
export function titlePrompt(about: string, kind: string, text: string, seed: string): ChatMessage[] {
  const quoted = `"${text}"`;
  const fence = createFence([quoted], `${seed}:title`);
  return [
    {
      role: 'user',
      content:
        `Generate a brief title (3-5 words) for ${about}:\n\n` +
        `${fence.wrap(kind, quoted)}\n\n` +
        `${fence.notice}\n\n` +
        'Reply with ONLY the title. No quotes, no punctuation, no explanation.',
    },
  ];
}

/** The title prompt of 01-council.md, the question quoted and fenced. */
export function buildTitlePrompt(userQuery: string, seed = ''): ChatMessage[] {
  return titlePrompt('a conversation that starts with this question', 'QUESTION', userQuery, seed);
}

const TITLE_MAX_LENGTH = 80;

/** The title a model wrote, without the quotes and punctuation models add anyway; null if unusable. */
export function cleanTitle(raw: string): string | null {
  const firstLine = raw.trim().split('\n')[0] ?? '';
  const cleaned = firstLine
    .replace(/^title\s*:\s*/i, '')
    .replace(/["'`*_#]/g, '')
    .replace(/[.!?,;:]+$/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  if (!cleaned) return null;
  return cleaned.length > TITLE_MAX_LENGTH
    ? `${truncate(cleaned, TITLE_MAX_LENGTH - 1).trimEnd()}…`
    : cleaned;
}

/** The first `max` UTF-16 units, without splitting a surrogate pair (an emoji is kept whole or dropped). */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/** What a conversation is called when the title call fails: the question's first words. */
export function fallbackTitle(question: string, words = 6): string {
  const parts = question.trim().split(/\s+/);
  const head = parts.slice(0, words).join(' ');
  const title = parts.length > words ? `${head}…` : head;
  return title.length > TITLE_MAX_LENGTH ? `${truncate(title, TITLE_MAX_LENGTH - 1)}…` : title;
}
