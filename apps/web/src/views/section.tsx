import type { ReactNode } from 'react';
import { Markdown } from '../markdown';

/** A part of a result view: a region named `label` (what tests and screen readers find it by), its heading, its content. */
export function Section({
  label,
  heading,
  className,
  children,
}: {
  label: string;
  heading: ReactNode;
  className?: string;
  children: ReactNode;
}) {
  return (
    <section className={className} aria-label={label}>
      <h3>{heading}</h3>
      {children}
    </section>
  );
}

/**
 * The answer a result view leads with: vote's and debate's winner (WinnerAnswer), council's
 * synthesis, the jury foreman's and the Delphi facilitator's report.
 */
export function MainAnswer({
  label,
  heading,
  children,
}: {
  label: string;
  heading: ReactNode;
  children: ReactNode;
}) {
  return (
    <Section className="main-answer" label={label} heading={heading}>
      {children}
    </Section>
  );
}

/** A report one model wrote for the panel (the jury's foreman, Delphi's facilitator): by whom, then its text. */
export function ModelReport({ model, text }: { model: string; text: string }) {
  return (
    <>
      <p className="muted">Report by {model}</p>
      <Markdown text={text} />
    </>
  );
}
