import type {
  DelphiResult,
  DeliveredEvent,
  DelphiEstimateSummary,
  NumericStats,
  QualitativeStats,
} from '@conclave/contracts';
import { BandChart, StackedBars } from '../charts';
import { Markdown } from '../markdown';

type RoundEvent = DeliveredEvent & {
  round: number;
  data: { estimates: DelphiEstimateSummary[]; stats: NumericStats & QualitativeStats };
};

export function DelphiView({ result, events }: { result: Partial<DelphiResult>; events: DeliveredEvent[] }) {
  const rounds = events.filter((e) => e.type === 'round_complete') as RoundEvent[];
  const numeric = rounds.length > 0 && 'mean' in rounds[0].data.stats;
  const revealed = result.report !== undefined;
  return (
    <div className="result delphi">
      {result.classification && (
        <p className="banner">
          {result.classification.type.toUpperCase()} question — {result.classification.reasoning}
        </p>
      )}
      {result.report && (
        <section className="main-answer" aria-label="report">
          <h3>
            {String(result.finalValue)}{' '}
            <span className={`badge ${result.converged ? 'badge-ok' : 'badge-warn'}`}>
              {result.converged ? `Converged in round ${result.convergenceRound}` : 'Max rounds reached'}
            </span>
          </h3>
          <Markdown text={result.report.report} />
        </section>
      )}
      {rounds.length > 0 && (
        <section>
          <h3>Rounds</h3>
          {numeric ? (
            <BandChart
              points={rounds.map((r) => ({
                round: r.round,
                mean: r.data.stats.mean,
                sd: r.data.stats.stdDev,
              }))}
            />
          ) : (
            <StackedBars rounds={rounds.map((r) => ({ round: r.round, parts: r.data.stats.distribution }))} />
          )}
          {rounds.map((r) => (
            <details key={r.round} open={r === rounds[rounds.length - 1]}>
              <summary>
                Round {r.round}:{' '}
                {numeric
                  ? `mean ${Math.round(r.data.stats.mean).toLocaleString()}`
                  : `agreement ${r.data.stats.agreementPercentage}%`}
              </summary>
              <div className="cards">
                {r.data.estimates.map((e) => {
                  const model = revealed
                    ? result.rounds?.[r.round - 1]?.estimates[r.data.estimates.indexOf(e)]?.model
                    : null;
                  return (
                    <article key={e.participantIndex} className="card">
                      <h4>{model ?? `Participant ${e.participantIndex}`}</h4>
                      <p>{e.estimate !== undefined ? e.estimate.toLocaleString() : e.answer}</p>
                      <small>
                        {e.confidence}
                        {e.changed ? ' · changed' : ''}
                      </small>
                    </article>
                  );
                })}
              </div>
            </details>
          ))}
        </section>
      )}
    </div>
  );
}
