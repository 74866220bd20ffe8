import type { ReactNode } from 'react';

/**
 * A delete that asks once more: the opener button, then the question with Delete and Keep. The
 * parent holds whether it is asking (it may take the question back, e.g. when its subject changes).
 */
export function ConfirmDelete({
  asking,
  onAsk,
  onKeep,
  onConfirm,
  question,
  opener,
  as: Wrapper = 'p',
  className,
  openerClassName = 'secondary',
}: {
  asking: boolean;
  onAsk: () => void;
  onKeep: () => void;
  onConfirm: () => void;
  question: ReactNode;
  /** The opener's text, e.g. "Delete batch…". */
  opener: string;
  /** The question's element: a paragraph, or a span inside a line of the form. */
  as?: 'p' | 'span';
  className: string;
  openerClassName?: string;
}) {
  if (!asking) {
    return (
      <button type="button" className={openerClassName} onClick={onAsk}>
        {opener}
      </button>
    );
  }
  return (
    <Wrapper className={className}>
      {question}{' '}
      <button type="button" className="danger" onClick={onConfirm}>
        Delete
      </button>{' '}
      <button type="button" className="secondary" onClick={onKeep}>
        Keep
      </button>
    </Wrapper>
  );
}
