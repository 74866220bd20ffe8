import { Fragment, memo, useLayoutEffect, useRef } from 'react';
import { Markdown } from '../markdown';

/** Anonymous label → model, as a mode reveals it (`{ "Response A": "openai/gpt-4o" }`). */
export type Labels = Record<string, string>;

/** A label the text named, with the model behind it. */
export interface NamedLabel {
  label: string;
  model: string;
}

/** A piece of text: as written, or a label to show as the model's name. */
export type LabelPiece = string | NamedLabel;

/**
 * `Response X` as a whole word: "Response", "response" or "RESPONSE", one space (or several, or a
 * no-break space), one capital letter, then neither letter nor digit. The letter stays capital:
 * "response a" is English, not a label.
 */
const LABEL = /(?<![\p{L}\p{N}_])(?:Response|response|RESPONSE)[ \t\u00a0]+([A-Z])(?![\p{L}\p{N}_])/gu;

/**
 * Splits `text` at every whole-word `Response X` whose label `labels` maps to a model: the text
 * between stays as written, each label becomes `{ label, model }`. A label the map does not know
 * (or an empty map: the mode has not revealed them yet) is left as text.
 */
export function splitLabels(text: string, labels: Labels): LabelPiece[] {
  const pieces: LabelPiece[] = [];
  let last = 0;
  let pending = '';
  for (const match of text.matchAll(LABEL)) {
    const label = `Response ${match[1]}`;
    const model = Object.hasOwn(labels, label) ? labels[label] : undefined;
    if (model === undefined) continue;
    pending += text.slice(last, match.index);
    if (pending) pieces.push(pending);
    pending = '';
    pieces.push({ label, model });
    last = match.index + match[0].length;
  }
  pending += text.slice(last);
  if (pending) pieces.push(pending);
  return pieces;
}

/** What a name chip's tooltip says: the label (and where it was used), the model. */
const chipTitle = (label: string, model: string, scope?: string) =>
  `${label}${scope ? ` (${scope})` : ''}: ${model}`;

/**
 * A model's name with the anonymous label it had kept as a small badge before it. `scope` says
 * where the label was used when a mode labels twice (debate: "round 1"); it shows in the badge.
 */
export function NameChip({ label, model, scope }: { label: string; model: string; scope?: string }) {
  return (
    <span className="name-chip" title={chipTitle(label, model, scope)} data-label={label}>
      <span className="label-badge">
        {label}
        {scope && <span className="badge-scope"> · {scope}</span>}
      </span>{' '}
      <span className="chip-name">{model}</span>
    </span>
  );
}

/** The same chip as NameChip, built as DOM nodes (text only) for the Markdown renderer's output. */
function chipElement(doc: Document, { label, model }: NamedLabel, scope?: string): HTMLElement {
  const chip = doc.createElement('span');
  chip.className = 'name-chip';
  chip.title = chipTitle(label, model, scope);
  chip.dataset.label = label;
  const badge = doc.createElement('span');
  badge.className = 'label-badge';
  badge.textContent = label;
  if (scope) {
    const where = doc.createElement('span');
    where.className = 'badge-scope';
    where.textContent = ` · ${scope}`;
    badge.append(where);
  }
  const name = doc.createElement('span');
  name.className = 'chip-name';
  name.textContent = model;
  chip.append(badge, doc.createTextNode(' '), name);
  return chip;
}

/**
 * Replaces every label the map knows in `root`'s text nodes with a name chip (splitLabels on each
 * text node); elements and attributes (a link's address) are left as they are.
 */
export function insertNameChips(root: HTMLElement, labels: Labels, scope?: string): void {
  const doc = root.ownerDocument;
  const walker = doc.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const found: { node: Text; pieces: LabelPiece[] }[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement?.closest('.name-chip')) continue;
    const pieces = splitLabels(node.nodeValue ?? '', labels);
    if (pieces.some((p) => typeof p !== 'string')) found.push({ node: node as Text, pieces });
  }
  for (const { node, pieces } of found) {
    const fragment = doc.createDocumentFragment();
    for (const piece of pieces)
      fragment.append(typeof piece === 'string' ? doc.createTextNode(piece) : chipElement(doc, piece, scope));
    node.replaceWith(fragment);
  }
}

/** Plain text (no Markdown) with the labels the map knows shown as name chips. */
export function NamedText({ text, labels, scope }: { text: string; labels?: Labels; scope?: string }) {
  return (
    <>
      {splitLabels(text, labels ?? {}).map((piece, i) =>
        typeof piece === 'string' ? (
          <Fragment key={i}>{piece}</Fragment>
        ) : (
          <NameChip key={i} label={piece.label} model={piece.model} scope={scope} />
        ),
      )}
    </>
  );
}

/**
 * The renderer, rendered again only when its text changes: React sets a rendered element's
 * innerHTML again at every render, which would take the chips out.
 */
const StableMarkdown = memo(Markdown);

/**
 * Model output as Markdown (the app's sanitizing renderer) with the labels the map knows shown as
 * name chips: the renderer's output is walked after it is in the page and each label in a text
 * node becomes a chip built from text nodes. Nothing here writes HTML.
 */
export function NamedMarkdown({ text, labels, scope }: { text: string; labels?: Labels; scope?: string }) {
  const mapKey = JSON.stringify(labels ?? {});
  const ref = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    if (ref.current) insertNameChips(ref.current, JSON.parse(mapKey) as Labels, scope);
  }, [text, mapKey, scope]);
  // A new map remounts the renderer: no chip of the old map stays, every label of the new one is named.
  return (
    <div className="named-markdown" ref={ref}>
      <StableMarkdown key={`${mapKey}|${scope ?? ''}`} text={text} />
    </div>
  );
}

/**
 * The label each of `models` had, in order: the first label of that model not given to an earlier
 * one (a roster may name the same model twice). Undefined for a model the map does not have.
 */
export function labelsFor(models: readonly string[], labels: Labels): (string | undefined)[] {
  const free = Object.entries(labels);
  return models.map((model) => {
    const at = free.findIndex(([, m]) => m === model);
    if (at < 0) return undefined;
    const [label] = free.splice(at, 1)[0];
    return label;
  });
}

/**
 * What a ballot says besides its choice: the text without its `VOTE: Response X` line (the choice
 * is shown on its own). The whole text when nothing else is left.
 */
export function ballotReason(voteText: string): string {
  const kept = voteText
    .split('\n')
    .filter((line) => !/^[\s>*_#-]*vote[\s*_]*:/i.test(line))
    .join('\n')
    .trim();
  return kept || voteText.trim();
}
