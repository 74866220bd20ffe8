import type { ModeEventText } from '../../event-text/reading';
import {
  fields,
  figure,
  list,
  num,
  OPENING,
  plainPhase,
  plural,
  round2,
  statsSummary,
  str,
} from '../../event-text/wording';

/**
 * How Delphi's events read (docs: 05-delphi.md's event sequence); see event-text/reading.ts.
 * Anonymity holds as during the run: a round is given as its statistics, never an estimate with
 * its author.
 */
export const delphiEventText: ModeEventText<'delphi'> = {
  events: {
    delphi_start: {
      ...OPENING,
      reasoning: () =>
        'Delphi: an anonymous panel estimates in rounds, seeing only the statistics of the last one.',
    },
    classify_complete: {
      cli: ({ data }) =>
        `[classify] complete: ${data.type} question${data.options ? ` (${data.options.join(' | ')})` : ''}`,
      mcp: ({ data }) => `classified as a ${data.type} question`,
      reasoning: (e) => {
        const classification = fields(e.data);
        const type = str(classification.type);
        const options = list(classification.options).map(String);
        if (!type) return null;
        return `Question classified as ${type}${options.length > 0 ? ` (options: ${options.join(', ')})` : ''}.`;
      },
      web: null,
    },
    round_start: {
      cli: (e) => `[round ${e.round}] started`,
      mcp: (e) => `round ${e.round} started`,
      reasoning: (e) => `Round ${figure(e.round)}: the panelists estimate.`,
      web: null,
    },
    round_complete: {
      cli: ({ round, data }) =>
        `[round ${round}] complete: ${statsSummary(data.stats, true)}${data.converged ? ', converged' : ''}`,
      mcp: ({ round, data }) => `round ${round} complete: ${statsSummary(data.stats, false)}`,
      reasoning: (e) => {
        const result = fields(e.data);
        const stats = fields(result.stats);
        const count = list(result.estimates).length;
        const round = figure(e.round);
        if (num(stats.median) !== null) {
          const spread = num(stats.cv) === null ? '' : `, coefficient of variation ${figure(stats.cv)}`;
          return (
            `Round ${round}: ${plural(count, 'estimate')}, median ${figure(stats.median)} ` +
            `(range ${figure(stats.min)}–${figure(stats.max)}${spread}).`
          );
        }
        if (str(stats.mode) !== null) {
          return (
            `Round ${round}: ${plural(count, 'answer')}, most often ${JSON.stringify(str(stats.mode))} ` +
            `(agreement ${figure(stats.agreementPercentage)}%).`
          );
        }
        return `Round ${round}: ${plural(count, 'estimate')}.`;
      },
      web: null,
    },
    convergence_reached: {
      cli: (e) => `converged in round ${e.round}`,
      mcp: (e) => `converged in round ${e.round}`,
      reasoning: (e) => `The panel converged in round ${figure(e.round)}.`,
      web: null,
    },
    max_rounds_reached: {
      cli: (e) => `no convergence by round ${e.round}`,
      mcp: (e) => `no convergence by round ${e.round}`,
      reasoning: (e) => `No convergence after ${plural(num(e.round) ?? 0, 'round')}: the last round stands.`,
      web: null,
    },
    synthesis_start: {
      ...plainPhase('synthesis', 'start'),
      reasoning: () => 'The facilitator writes the report.',
      web: null,
    },
    synthesis_complete: {
      cli: ({ data }) =>
        `[synthesis] complete: final value ${typeof data.finalValue === 'number' ? round2(data.finalValue) : data.finalValue} (facilitator ${data.facilitatorModel})`,
      mcp: () => 'synthesis complete: the facilitator wrote the report',
      // The report itself is streamed as it is written.
      reasoning: null,
      web: null,
    },
  },
  calls: { classify: 'classified the question', synthesis: 'wrote the report', round_n: 'estimated' },
};
