import type { CouncilResult } from '@conclave/contracts';
import { useId, useState } from 'react';
import { RankChart } from '../charts';
import { LabelName } from './ballots';
import { MainAnswer, Section } from './section';
import { labelsFor, NameChip, NamedMarkdown, type Labels } from './names';
import { ViewStyles } from './style';
import { TabList } from './tabs';

/** The rank (1 = best) each evaluator's parsed ranking gave each model. */
export function ranksByModel(result: Partial<CouncilResult>): Map<string, number[]> {
  const labels = result.stage2Metadata?.labelToModel ?? {};
  const ranks = new Map<string, number[]>();
  for (const evaluation of result.stage2 ?? []) {
    evaluation.parsedRanking.forEach((label, i) => {
      if (!Object.hasOwn(labels, label)) return;
      const model = labels[label];
      ranks.set(model, [...(ranks.get(model) ?? []), i + 1]);
    });
  }
  return ranks;
}

export function CouncilView({ result }: { result: Partial<CouncilResult> }) {
  const [tab, setTab] = useState(0);
  const panel = useId();
  const answers = result.stage1 ?? [];
  const labels: Labels = result.stage2Metadata?.labelToModel ?? {};
  const answerLabels = labelsFor(
    answers.map((a) => a.model),
    labels,
  );
  const aggregate = result.stage2Metadata?.aggregateRankings ?? [];
  const ranks = ranksByModel(result);
  const labelOf = (model: string) => Object.keys(labels).find((l) => labels[l] === model);
  const shown = answers[tab] ?? answers[0];
  return (
    <div className="result council">
      <ViewStyles />
      {result.stage3 && (
        <MainAnswer label="synthesis" heading={`Synthesis by ${result.stage3.model}`}>
          <NamedMarkdown text={result.stage3.response} labels={labels} />
        </MainAnswer>
      )}
      {answers.length > 0 && (
        <Section label="answers" heading="Answers">
          <TabList
            label="answers"
            panelId={panel}
            selected={answers[tab] ? tab : 0}
            onSelect={setTab}
            tabs={answers.map((a, i) => ({
              key: `${a.model}-${i}`,
              label: (
                <>
                  {a.model} <small>{a.responseTimeMs} ms</small>
                </>
              ),
            }))}
          />
          {shown && (
            <div role="tabpanel" id={panel} className="answer-panel">
              {answerLabels[answers.indexOf(shown)] && (
                <p className="muted">
                  Ranked anonymously as{' '}
                  <span className="label-badge">{answerLabels[answers.indexOf(shown)]}</span>
                </p>
              )}
              <NamedMarkdown text={shown.response} labels={labels} />
            </div>
          )}
        </Section>
      )}
      {result.stage2Metadata && (
        <Section label="ranking" heading="Aggregate ranking">
          {aggregate.length === 0 ? (
            <p className="muted">No evaluator's ranking could be read, so there is no aggregate ranking.</p>
          ) : (
            <div className="ranking-grid">
              <div className="table-scroll">
                <table>
                  <thead>
                    <tr>
                      <th>#</th>
                      <th>Model</th>
                      <th>Average rank</th>
                      <th className="narrow-hide">Ranked by</th>
                    </tr>
                  </thead>
                  <tbody>
                    {aggregate.map((r, i) => {
                      const label = labelOf(r.model);
                      return (
                        <tr key={r.model}>
                          <td>{i + 1}</td>
                          <td>{label ? <NameChip label={label} model={r.model} /> : r.model}</td>
                          <td>{r.averageRank}</td>
                          <td className="narrow-hide">{r.rankingsCount}</td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
              <RankChart
                title="Average rank of each answer"
                count={Math.max(Object.keys(labels).length, aggregate.length)}
                rows={aggregate.map((r) => {
                  const label = labelOf(r.model);
                  return {
                    key: r.model,
                    label: label ? <NameChip label={label} model={r.model} /> : r.model,
                    text: r.model,
                    average: r.averageRank,
                    ranks: ranks.get(r.model) ?? [],
                  };
                })}
              />
            </div>
          )}
        </Section>
      )}
      {(result.stage2 ?? []).length > 0 && (
        <Section label="evaluations" heading="Evaluations">
          <div className="cards">
            {(result.stage2 ?? []).map((r, i) => (
              <article key={`${r.model}-${i}`} className="card evaluation" data-evaluator={r.model}>
                <h4>{r.model}</h4>
                {r.parsedRanking.length > 0 ? (
                  <ol className="ranking-list" aria-label={`ranking by ${r.model}`}>
                    {r.parsedRanking.map((label) => (
                      <li key={label}>
                        <LabelName label={label} labels={labels} />
                      </li>
                    ))}
                  </ol>
                ) : (
                  <p className="muted no-ranking">
                    No ranking could be read from this evaluation; it is left out of the average.
                  </p>
                )}
                <details>
                  <summary>Full evaluation</summary>
                  <NamedMarkdown text={r.ranking} labels={labels} />
                </details>
              </article>
            ))}
          </div>
        </Section>
      )}
    </div>
  );
}
