import DOMPurify from 'dompurify';
import { marked } from 'marked';

/** Model output rendered as Markdown, sanitized: nothing a model writes can run as script. */
export function Markdown({ text }: { text: string }) {
  const html = DOMPurify.sanitize(marked.parse(text, { async: false }) as string);
  return <div className="markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}
