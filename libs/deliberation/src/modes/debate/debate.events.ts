import type { ModeEventText } from '../../event-text/reading';
import {
  answersCollected,
  fields,
  isObject,
  list,
  OPENING,
  plainPhase,
  str,
  votesLines,
  voteTally,
  winnerDeclared,
} from '../../event-text/wording';

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

/** How debate's events read (docs: 04-debate.md's event sequence); see event-text/reading.ts. */
export const debateEventText: ModeEventText<'debate'> = {
  events: {
    debate_start: {
      ...OPENING,
      reasoning: () =>
        'Debate: opening answers, a revision round in which each model reads the others, then a vote.',
    },
    round1_start: {
      ...plainPhase('round1', 'start'),
      reasoning: () => 'Round 1: each model answers.',
      web: null,
    },
    round1_complete: answersCollected('round1'),
    revision_start: {
      ...plainPhase('revision', 'start'),
      reasoning: () =>
        "Revision round: each model revises, stands by or merges its answer after reading the others'.",
      web: null,
    },
    revision_complete: {
      cli: ({ data: { summary } }) =>
        `[revision] complete: ${summary.revised} revised, ${summary.stood} stood, ${summary.merged} merged`,
      mcp: ({ data: { summary } }) =>
        `revision complete: ${summary.revised} revised, ${summary.stood} stood, ${summary.merged} merged`,
      reasoning: (e) => {
        const decisions = list(fields(e.data).revisions)
          .filter(isObject)
          .map((r) => `${str(r.model) ?? '?'} ${decisionWord(str(r.decision))}`);
        return decisions.length > 0 ? `Revisions: ${decisions.join(', ')}.` : null;
      },
      web: null,
    },
    vote_start: {
      ...plainPhase('vote', 'start'),
      reasoning: () => 'Vote: each model votes for the best revised answer.',
      web: null,
    },
    vote_complete: { ...voteTally, reasoning: (e) => votesLines(fields(e.data)) },
    winner_declared: winnerDeclared,
  },
  calls: { round1: 'answered', revision: 'revised', vote: 'voted' },
};
