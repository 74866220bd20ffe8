import { resumedLine, type DeliveredEvent, type ModeName } from '@conclave/contracts';

/** The stage whose single call writes the mode's final text, streamed as it is written; none for vote and debate. */
export const FINAL_STAGE: Record<ModeName, { stage: string; startEvent: string } | null> = {
  council: { stage: 'stage3', startEvent: 'stage3_start' },
  jury: { stage: 'verdict', startEvent: 'verdict_start' },
  delphi: { stage: 'synthesis', startEvent: 'synthesis_start' },
  vote: null,
  debate: null,
};

const MAX_LINE = 300;
const MAX_ERROR = 160;

type Fields = Record<string, unknown>;

const isObject = (value: unknown): value is Fields =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const num = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const data = (event: Fields): Fields => (isObject(event.data) ? event.data : {});

/** A one-line form of text from the panel (an error message): whitespace folded, cut short. */
function oneLine(text: string, max: number): string {
  const folded = text.replace(/\s+/g, ' ').trim();
  return folded.length > max ? `${folded.slice(0, max - 1)}…` : folded;
}

const seconds = (ms: unknown): string => {
  const value = num(ms);
  return value === null ? '' : ` (${(value / 1000).toFixed(1)} s)`;
};

/** A number as people read it: thousands grouped, at most three decimals. */
function figure(value: unknown): string {
  const n = num(value);
  if (n === null) return '?';
  return n.toLocaleString('en-US', { maximumFractionDigits: Math.abs(n) >= 100 ? 0 : 3 });
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** What each stage's calls do, for the line that says a call succeeded. */
const DID: Record<string, string> = {
  stage1: 'answered',
  answer: 'answered',
  round1: 'answered',
  stage2: 'ranked the anonymised answers',
  stage3: 'wrote the synthesis',
  vote: 'voted',
  tiebreak: 'broke the tie',
  revision: 'revised',
  deliberation: 'assessed the content',
  verdict: 'wrote the verdict report',
  classify: 'classified the question',
  synthesis: 'wrote the report',
};

/**
 * The panel's progress as short lines of text (the `reasoning_content` of a /v1 answer), one
 * event at a time: who answered, rankings, votes, verdicts, debate decisions, Delphi rounds.
 * Anonymity holds as the mode keeps it during the run: Delphi panelists are numbered and their
 * estimates are given as a round's statistics only, never with an author; error texts of Delphi
 * panelists are left out (they may name the model).
 */
export class ProgressLines {
  constructor(private readonly mode: ModeName) {}

  /** The lines an event adds (none for most): each ends with a newline. */
  linesFor(event: DeliveredEvent): string[] {
    return this.describe(event as DeliveredEvent & Fields).map((line) => `${oneLine(line, MAX_LINE)}\n`);
  }

  private describe(event: Fields): string[] {
    if (event.type === 'model_progress') return this.progress(event);
    switch (event.type) {
      // council
      case 'stage1_start':
        return this.mode === 'council' ? ['Stage 1: each council member answers the question.'] : [];
      case 'stage1_complete':
      case 'round1_complete':
        return [`${plural(list(event.data).length, 'answer')} collected.`];
      case 'stage2_start':
        return ['Stage 2: each member ranks the answers, anonymised as Response A, B, …'];
      case 'stage2_complete':
        return this.councilRanking(event);
      case 'stage3_start':
        return ['Stage 3: the chairman writes the synthesis.'];
      // vote
      case 'vote_session_start':
        return ['Vote: each model answers, then every model votes for the best anonymised answer.'];
      case 'vote_start':
        return this.mode === 'debate'
          ? ['Vote: each model votes for the best revised answer.']
          : ['Voting on the anonymised answers.'];
      case 'vote_complete':
        return this.votes(data(event));
      case 'tiebreak_start':
        return ['The vote is tied: a tiebreak decides.'];
      case 'tiebreak_complete': {
        const tiebreak = data(event);
        return [`Tiebreak (${str(tiebreak.method) ?? 'tiebreak'}): ${str(tiebreak.chosenLabel) ?? '?'}.`];
      }
      case 'winner_declared':
        return this.winner(data(event));
      // debate
      case 'debate_start':
        return [
          'Debate: opening answers, a revision round in which each model reads the others, then a vote.',
        ];
      case 'round1_start':
        return ['Round 1: each model answers.'];
      case 'revision_start':
        return [
          "Revision round: each model revises, stands by or merges its answer after reading the others'.",
        ];
      case 'revision_complete':
        return this.revisions(data(event));
      // jury
      case 'jury_start':
        return [
          'Jury: each juror scores the content on five dimensions and gives a verdict; the foreman reports.',
        ];
      case 'deliberation_start':
        return ['The jurors assess the content.'];
      case 'juror_complete':
        return this.juror(data(event));
      case 'all_jurors_complete':
        return this.jurySummary(data(event));
      case 'verdict_start':
        return ['The foreman writes the verdict report.'];
      case 'verdict_complete': {
        const verdict = str(data(event).finalVerdict);
        return verdict ? [`Final verdict: ${verdict}.`] : [];
      }
      // delphi
      case 'delphi_start':
        return [
          'Delphi: an anonymous panel estimates in rounds, seeing only the statistics of the last one.',
        ];
      case 'classify_complete':
        return this.classification(data(event));
      case 'round_start':
        return [`Round ${figure(event.round)}: the panelists estimate.`];
      case 'round_complete':
        return this.delphiRound(event);
      case 'convergence_reached':
        return [`The panel converged in round ${figure(event.round)}.`];
      case 'max_rounds_reached':
        return [`No convergence after ${plural(num(event.round) ?? 0, 'round')}: the last round stands.`];
      case 'synthesis_start':
        return ['The facilitator writes the report.'];
      // extension event: a stage interrupted by a fault runs again
      case 'resumed': {
        const line = resumedLine(event);
        return [`${line.charAt(0).toUpperCase()}${line.slice(1)}.`];
      }
      default:
        return [];
    }
  }

  private progress(event: Fields): string[] {
    const stage = str(event.stage) ?? '';
    const state = str(event.state);
    const who = this.participant(event.participant);
    const delphiPanelist = this.mode === 'delphi' && typeof event.participant === 'number';
    if (state === 'failed') {
      const error = str(event.error);
      // `cut: quorum reached`, `cancelled: …`: the stage went on (or stopped) without it; not a failure of its own.
      const cut = /^\s*(cut|cancelled|stopped):\s*/i.exec(error ?? '');
      if (cut && error) {
        const why = oneLine(error.slice(cut[0].length), MAX_ERROR);
        const verb = cut[1].toLowerCase() === 'cut' ? 'was cut' : 'was stopped';
        return [`${who} ${verb}${why && !delphiPanelist ? `: ${why}` : '.'}`];
      }
      return [`${who} failed${error && !delphiPanelist ? `: ${oneLine(error, MAX_ERROR)}` : '.'}`];
    }
    if (state === 'retrying') return [`${who}: retrying.`];
    if (state !== 'succeeded') return [];
    // Jurors' own events say more (scores and verdict); the final text is streamed as it is written.
    if (stage === 'deliberation' || stage === FINAL_STAGE[this.mode]?.stage) return [];
    const did = DID[stage] ?? (stage.startsWith('round_') ? 'estimated' : 'answered');
    return [`${who} ${did}${seconds(event.responseTimeMs)}.`];
  }

  private participant(value: unknown): string {
    if (typeof value === 'number') return `Panelist ${value}`;
    return str(value) ?? 'A model';
  }

  private councilRanking(event: Fields): string[] {
    const metadata = isObject(event.metadata) ? event.metadata : {};
    const ranking = list(metadata.aggregateRankings)
      .filter(isObject)
      .map((r, i) => `${i + 1}. ${str(r.model) ?? '?'} (average rank ${figure(r.averageRank)})`);
    return ranking.length > 0 ? [`Aggregate ranking: ${ranking.join(', ')}.`] : ['No ranking could be read.'];
  }

  private votes(result: Fields): string[] {
    const votes = list(result.votes)
      .filter(isObject)
      .map((v) => `${str(v.model) ?? '?'} → ${str(v.votedFor) ?? 'no valid vote'}`);
    const lines = votes.length > 0 ? [`Votes: ${votes.join(', ')}.`] : [];
    if (result.isTie === true) lines.push(`Tie between ${list(result.tiedLabels).map(String).join(', ')}.`);
    return lines;
  }

  private winner(winner: Fields): string[] {
    const label = str(winner.winnerLabel) ?? '?';
    const model = str(winner.winnerModel);
    const count = `${figure(winner.voteCount)} of ${figure(winner.totalVotes)} votes`;
    return [
      `Winner: ${label}${model ? ` by ${model}` : ''} (${count}${winner.tiebroken === true ? ', after a tiebreak' : ''}).`,
    ];
  }

  private revisions(result: Fields): string[] {
    const decisions = list(result.revisions)
      .filter(isObject)
      .map((r) => `${str(r.model) ?? '?'} ${decisionWord(str(r.decision))}`);
    return decisions.length > 0 ? [`Revisions: ${decisions.join(', ')}.`] : [];
  }

  private juror(juror: Fields): string[] {
    const model = str(juror.model) ?? 'A juror';
    const verdict = str(juror.verdict) ?? 'no readable verdict';
    const average = num(juror.average);
    return [`${model}: ${verdict}${average === null ? '' : `, average score ${figure(average)}/10`}.`];
  }

  private jurySummary(summary: Fields): string[] {
    const tally = isObject(summary.voteTally) ? summary.voteTally : {};
    const lines = [
      `Jurors: ${figure(tally.approve)} APPROVE, ${figure(tally.revise)} REVISE, ${figure(tally.reject)} REJECT` +
        `${str(summary.majorityVerdict) ? ` (majority ${str(summary.majorityVerdict)})` : ''}.`,
    ];
    const failed = list(summary.failedJurors).filter(isObject).length;
    if (failed > 0) lines.push(`${plural(failed, 'juror')} failed.`);
    return lines;
  }

  private classification(classification: Fields): string[] {
    const type = str(classification.type);
    const options = list(classification.options).map(String);
    if (!type) return [];
    return [
      `Question classified as ${type}${options.length > 0 ? ` (options: ${options.join(', ')})` : ''}.`,
    ];
  }

  private delphiRound(event: Fields): string[] {
    const result = data(event);
    const stats = isObject(result.stats) ? result.stats : {};
    const count = list(result.estimates).length;
    const round = figure(event.round);
    if (num(stats.median) !== null) {
      const spread = num(stats.cv) === null ? '' : `, coefficient of variation ${figure(stats.cv)}`;
      return [
        `Round ${round}: ${plural(count, 'estimate')}, median ${figure(stats.median)} ` +
          `(range ${figure(stats.min)}–${figure(stats.max)}${spread}).`,
      ];
    }
    if (str(stats.mode) !== null) {
      return [
        `Round ${round}: ${plural(count, 'answer')}, most often ${JSON.stringify(str(stats.mode))} ` +
          `(agreement ${figure(stats.agreementPercentage)}%).`,
      ];
    }
    return [`Round ${round}: ${plural(count, 'estimate')}.`];
  }
}

function decisionWord(decision: string | null): string {
  switch (decision) {
    case 'REVISE':
      return 'revised';
    case 'STAND':
      return 'stood by its answer';
    case 'MERGE':
      return 'merged answers';
    default:
      return 'gave no readable decision';
  }
}
