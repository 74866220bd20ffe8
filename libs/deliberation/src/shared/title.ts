import type { ChatMessage } from '@conclave/llm';

export function buildTitlePrompt(userQuery: string): ChatMessage[] {
  return [
    {
      role: 'user',
      content:
        'Generate a brief title (3-5 words) for a conversation that starts with this question:\n\n' +
        `"${userQuery}"\n\n` +
        'Reply with ONLY the title. No quotes, no punctuation, no explanation.',
    },
  ];
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
  return cleaned.length > TITLE_MAX_LENGTH ? `${cleaned.slice(0, TITLE_MAX_LENGTH - 1).trimEnd()}…` : cleaned;
}

/** What a conversation is called when the title call fails: the question's first words. */
export function fallbackTitle(question: string, words = 6): string {
  const parts = question.trim().split(/\s+/);
  const head = parts.slice(0, words).join(' ');
  const title = parts.length > words ? `${head}…` : head;
  return title.length > TITLE_MAX_LENGTH ? `${title.slice(0, TITLE_MAX_LENGTH - 1)}…` : title;
}
