import type { ModeEventText } from '../../event-text/reading';
import {
  answersCollected,
  fields,
  OPENING,
  plainPhase,
  str,
  votesLines,
  voteTally,
  winnerDeclared,
} from '../../event-text/wording';

/** How vote's events read (docs: 02-vote.md's event sequence); see event-text/reading.ts. */
export const voteEventText: ModeEventText<'vote'> = {
  events: {
    vote_session_start: {
      ...OPENING,
      reasoning: () => 'Vote: each model answers, then every model votes for the best anonymised answer.',
    },
    stage1_start: { ...plainPhase('stage1', 'start'), reasoning: null, web: null },
    stage1_complete: answersCollected('stage1'),
    vote_start: {
      ...plainPhase('vote', 'start'),
      reasoning: () => 'Voting on the anonymised answers.',
      web: null,
    },
    vote_complete: { ...voteTally, reasoning: (e) => votesLines(fields(e.data)) },
    tiebreak_start: {
      ...plainPhase('tiebreak', 'start'),
      reasoning: () => 'The vote is tied: a tiebreak decides.',
      web: null,
    },
    tiebreak_complete: {
      cli: ({ data }) => `[tiebreak] complete: ${data.chosenLabel} (${data.method})`,
      mcp: ({ data }) => `tiebreak complete: ${data.chosenLabel} (${data.method})`,
      reasoning: (e) => {
        const tiebreak = fields(e.data);
        return `Tiebreak (${str(tiebreak.method) ?? 'tiebreak'}): ${str(tiebreak.chosenLabel) ?? '?'}.`;
      },
      web: null,
    },
    winner_declared: winnerDeclared,
  },
  calls: { answer: 'answered', vote: 'voted', tiebreak: 'broke the tie' },
};
