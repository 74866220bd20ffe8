/**
 * Parsers read model output with runs of spaces and tabs collapsed to one space, so that no
 * pattern with optional parts around whitespace can backtrack over a long run (a model that prints
 * thousands of spaces must not freeze a worker).
 */
export const collapseSpaces = (text: string): string => text.replace(/[ \t]+/g, ' ');
