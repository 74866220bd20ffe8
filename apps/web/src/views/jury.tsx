import { DIMENSIONS, type DimensionScores, type JurorAssessment, type JuryResult } from '@conclave/contracts';
import { useState } from 'react';
import { BarChart, formatNumber, Radar, RangeChart } from '../charts';
import { Markdown } from '../markdown';
import { MainAnswer, ModelReport, Section } from './section';
import { ViewStyles } from './style';
import { TabList } from './tabs';

const LABELS = DIMENSIONS.map((d) => d.charAt(0).toUpperCase() + d.slice(1));

/** The mean of the dimensions that have a score, or null when none has. */
export function overallScore(scores: DimensionScores | undefined): number | null {
  const given = DIMENSIONS.map((d) => scores?.[d]).filter((s): s is number => typeof s === 'number');
  return given.length === 0 ? null : Math.round((given.reduce((a, b) => a + b, 0) / given.length) * 10) / 10;
}

/**
 * How many jurors' scores (at least one of the five) and verdicts could be read, out of the jurors
 * asked (issue 36: "from 3 of 3 jurors" counted answers, not readable scores).
 */
export function readCounts(jurors: readonly JurorAssessment[]): { scored: number; withVerdict: number } {
  return {
    scored: jurors.filter((j) => DIMENSIONS.some((d) => typeof j.scores[d] === 'number')).length,
    withVerdict: jurors.filter((j) => j.verdict !== null).length,
  };
}

export function JuryView({ result }: { result: Partial<JuryResult> }) {
  const [tab, setTab] = useState(0);
  const jurors = result.jurors ?? [];
  const summary = result.jurorSummary;
  const overall = overallScore(summary?.dimensionAverages ?? result.dimensionAverages);
  // Without the juror cards (not loaded), the summary's count of answering jurors is all there is.
  const read =
    jurors.length > 0
      ? readCounts(jurors)
      : { scored: summary?.successfulJurors ?? 0, withVerdict: summary?.successfulJurors ?? 0 };
  return (
    <div className="result jury">
      <ViewStyles />
      {result.presentation && (
        <section className="content-card" aria-label="content under evaluation">
          {result.presentation.originalQuestion && (
            <p className="muted">{result.presentation.originalQuestion}</p>
          )}
          <Markdown text={result.presentation.content} />
        </section>
      )}
      {result.foreman && (
        <MainAnswer
          label="foreman report"
          heading={
            <>
              Verdict{' '}
              <span className={`badge verdict-${result.foreman.finalVerdict}`}>
                {result.foreman.finalVerdict}
              </span>
              {overall !== null && (
                <>
                  {' '}
                  <span className="badge">overall {formatNumber(overall)}/10</span>
                </>
              )}
            </>
          }
        >
          <ModelReport model={result.foreman.model} text={result.foreman.reportText} />
        </MainAnswer>
      )}
      {jurors.length > 0 && (
        <Section label="jurors" heading="Jurors">
          <TabList
            label="jurors"
            className="tabs juror-tabs"
            selected={jurors[tab] ? tab : 0}
            onSelect={setTab}
            tabs={jurors.map((j, i) => ({ key: `${j.model}-${i}`, label: j.model }))}
          />
          <div className="cards">
            {jurors.map((j, i) => (
              <article key={`${j.model}-${i}`} className={`card juror ${tab === i ? 'active' : ''}`}>
                <h4>
                  {j.model}{' '}
                  <span className={`badge verdict-${j.verdict ?? 'none'}`}>{j.verdict ?? 'no verdict'}</span>
                </h4>
                <small>
                  {j.responseTimeMs} ms
                  {j.average !== null && ` · average ${formatNumber(j.average)}/10`}
                  {!j.parseSuccess && ' · some scores could not be read'}
                </small>
                <Radar
                  title={`Scores by ${j.model}, out of 10`}
                  scores={DIMENSIONS.map((d) => j.scores[d])}
                  labels={LABELS}
                />
                {j.recommendations.length > 0 && (
                  <details>
                    <summary>Recommendations ({j.recommendations.length})</summary>
                    <ul>
                      {j.recommendations.map((r, n) => (
                        <li key={n}>{r}</li>
                      ))}
                    </ul>
                  </details>
                )}
                <details>
                  <summary>Assessment</summary>
                  <Markdown text={j.assessmentText} />
                </details>
              </article>
            ))}
          </div>
        </Section>
      )}
      {summary && (
        <Section label="summary" heading="Dimensions">
          {overall !== null && (
            <p>
              Overall average <span className="overall">{formatNumber(overall)}</span>
              <span className="muted">/10</span> from the scores of {read.scored} of {summary.jurorCount}{' '}
              jurors
              {read.scored < summary.successfulJurors &&
                ` (${summary.successfulJurors - read.scored} answered without a readable score)`}
            </p>
          )}
          <RangeChart
            title="Average score per dimension, with the lowest and highest juror's, out of 10"
            rows={DIMENSIONS.map((d, i) => ({
              key: d,
              label: LABELS[i],
              average: summary.dimensionAverages[d],
              low: summary.dimensionRanges[d].min,
              high: summary.dimensionRanges[d].max,
            }))}
          />
          <details>
            <summary>As a table</summary>
            <div className="table-scroll">
              <table>
                <thead>
                  <tr>
                    <th>Dimension</th>
                    <th>Average</th>
                    <th>Lowest–highest</th>
                  </tr>
                </thead>
                <tbody>
                  {DIMENSIONS.map((d, i) => (
                    <tr key={d}>
                      <td>{LABELS[i]}</td>
                      <td>{summary.dimensionAverages[d] ?? '–'}</td>
                      <td>
                        {summary.dimensionRanges[d].min ?? '–'}–{summary.dimensionRanges[d].max ?? '–'}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </details>
          <h3>Verdicts</h3>
          <BarChart
            title="Jurors per verdict"
            axisTitle="jurors"
            max={summary.jurorCount}
            bars={[
              {
                key: 'APPROVE',
                label: 'APPROVE',
                text: 'approve',
                value: summary.voteTally.approve,
                tone: 'ok',
              },
              {
                key: 'REVISE',
                label: 'REVISE',
                text: 'revise',
                value: summary.voteTally.revise,
                tone: 'warn',
              },
              {
                key: 'REJECT',
                label: 'REJECT',
                text: 'reject',
                value: summary.voteTally.reject,
                tone: 'bad',
              },
            ]}
          />
          <p>
            Majority verdict:{' '}
            <span className={`badge verdict-${summary.majorityVerdict}`}>{summary.majorityVerdict}</span>{' '}
            <span className="muted">
              verdicts read from {read.withVerdict} of {summary.jurorCount} jurors
            </span>
          </p>
          {summary.failedJurors.length > 0 && (
            <p className="muted">
              Failed: {summary.failedJurors.map((f) => `${f.model} (${f.reason})`).join(', ')}
            </p>
          )}
          {(summary.warnings ?? []).map((w) => (
            <p key={w} className="muted">
              {w}
            </p>
          ))}
        </Section>
      )}
    </div>
  );
}
