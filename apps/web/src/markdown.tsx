import DOMPurify, { type Config, type DOMPurify as Purifier } from 'dompurify';
import { Marked } from 'marked';

const escapeHtml = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

/**
 * GitHub-flavoured Markdown, except what must not reach the page: an image shows as its alt text
 * (nothing is loaded from anywhere a model names) and a task-list box as `[ ]` / `[x]` text.
 */
const markdown = new Marked({
  async: false,
  renderer: {
    image: ({ text }) => escapeHtml(text),
    checkbox: ({ checked }) => (checked ? '[x] ' : '[ ] '),
  },
});

/**
 * The Markdown subset the views need, and nothing else: no forms or inputs, no style, class, id or
 * data attributes (nothing can cover the page, mimic its controls or clobber its globals), no
 * images, frames, SVG or MathML.
 */
const ALLOWED: Config = {
  ALLOWED_TAGS: [
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'p',
    'br',
    'hr',
    'strong',
    'b',
    'em',
    'i',
    'del',
    's',
    'code',
    'pre',
    'blockquote',
    'ul',
    'ol',
    'li',
    'table',
    'thead',
    'tbody',
    'tr',
    'th',
    'td',
    'a',
  ],
  // href on links, align on table cells, start on ordered lists: what marked writes.
  ALLOWED_ATTR: ['href', 'align', 'start'],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
};

const LINK_PROTOCOLS = ['http:', 'https:', 'mailto:'];

/** Where a link goes, as the reader should see it: the host of a web address, a mail address. */
function linkTarget(href: string | null): { href: string; shown: string } | null {
  if (!href) return null;
  let url: URL;
  try {
    url = new URL(href.trim()); // relative links (to this app's own pages or API) do not parse
  } catch {
    return null;
  }
  if (!LINK_PROTOCOLS.includes(url.protocol)) return null;
  if (url.protocol === 'mailto:') {
    let address = url.pathname;
    try {
      address = decodeURIComponent(address);
    } catch {
      // keep it encoded
    }
    return { href: url.href, shown: address };
  }
  return { href: url.href, shown: url.host };
}

/**
 * Links keep only http, https and mailto targets; each opens in a new tab with neither opener nor
 * referrer, and shows its real target: `[Click here](https://evil.example/x)` reads
 * "Click here (evil.example)".
 */
function hardenLink(link: Element): void {
  const original = link.getAttribute('href');
  const target = linkTarget(original);
  if (!target) {
    link.removeAttribute('href');
    return;
  }
  link.setAttribute('href', target.href);
  link.setAttribute('title', target.href);
  link.setAttribute('target', '_blank');
  link.setAttribute('rel', 'noopener noreferrer nofollow');
  const text = (link.textContent ?? '').trim();
  if (text !== original?.trim() && text !== target.href && text !== target.shown) {
    link.appendChild(link.ownerDocument.createTextNode(` (${target.shown})`));
  }
}

let purifier: Purifier | null = null;

/** A DOMPurify of our own, so its hook and settings touch nothing else on the page. */
function sanitizer(): Purifier {
  if (!purifier) {
    purifier = DOMPurify(window);
    purifier.addHook('afterSanitizeAttributes', (node) => {
      if (node.nodeName === 'A') hardenLink(node as Element);
    });
  }
  return purifier;
}

/** Model output as sanitized HTML: nothing a model writes can run, load, cover the page or mislead. */
export function renderMarkdown(text: string): string {
  return sanitizer().sanitize(markdown.parse(text) as string, ALLOWED);
}

/** Model output rendered as Markdown, sanitized: nothing a model writes can run as script. */
export function Markdown({ text }: { text: string }) {
  return <div className="markdown" dangerouslySetInnerHTML={{ __html: renderMarkdown(text) }} />;
}
