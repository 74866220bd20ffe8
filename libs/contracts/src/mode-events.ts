import type { Stage1Response } from './council';
import type { DebateVoteResult, DebateWinnerResult, LabelMap, RevisionRoundResult } from './debate';
import type {
  DelphiClassification,
  DelphiEstimateSummary,
  DelphiReport,
  DelphiStats,
  QuestionType,
} from './delphi';
import type {
  CouncilEventPayloads,
  ErrorPayload,
  EventEnvelope,
  ExtensionEventPayloads,
  NoPayload,
} from './events';
import type { ForemanReport, JurorAssessment, JurorSummary, JuryPresentation } from './jury';
import type { ModeName } from './modes';
import type { TiebreakResult, VoteTallyResult, VoteWinnerResult } from './vote';

/**
 * The stored events of each mode, by type, with their payloads as the mode documents give them
 * (the "SSE Event Sequence" of 01-council.md … 05-delphi.md). Typed here so that what reads an
 * event (the event describer, libs/deliberation/src/event-text) is checked against what the mode
 * sends; events still arrive untyped over the wire.
 */
export interface VoteEventPayloads {
  vote_session_start: { conversationId: string; messageId: string; mode: 'vote' };
  stage1_start: NoPayload;
  stage1_complete: { data: Stage1Response[] };
  vote_start: { data: { labelMap: LabelMap } };
  vote_complete: { data: VoteTallyResult };
  tiebreak_start: NoPayload;
  tiebreak_complete: { data: TiebreakResult };
  winner_declared: { data: VoteWinnerResult };
}

export interface JuryEventPayloads {
  jury_start: { conversationId: string; messageId: string; mode: 'jury' };
  present_start: NoPayload;
  present_complete: { data: JuryPresentation };
  deliberation_start: NoPayload;
  juror_complete: { data: JurorAssessment };
  all_jurors_complete: { data: JurorSummary };
  verdict_start: NoPayload;
  verdict_complete: { data: ForemanReport };
}

export interface DebateEventPayloads {
  debate_start: { conversationId: string; messageId: string; mode: 'debate' };
  round1_start: NoPayload;
  round1_complete: { data: Stage1Response[] };
  revision_start: { data: { labelMap: LabelMap } };
  revision_complete: { data: RevisionRoundResult };
  vote_start: { data: { revisedLabelMap: LabelMap } };
  vote_complete: { data: DebateVoteResult };
  winner_declared: { data: DebateWinnerResult };
}

export interface DelphiEventPayloads {
  delphi_start: { conversationId: string; messageId: string; questionType: QuestionType | null };
  classify_complete: { data: DelphiClassification };
  round_start: { round: number };
  round_complete: {
    round: number;
    data: { estimates: DelphiEstimateSummary[]; stats: DelphiStats; converged: boolean };
  };
  convergence_reached: { round: number; stats: DelphiStats };
  max_rounds_reached: { round: number; stats: DelphiStats };
  synthesis_start: NoPayload;
  synthesis_complete: { data: DelphiReport };
}

/** Council's own events: CouncilEventPayloads without the ones every mode sends. */
export type CouncilOwnEventPayloads = Omit<CouncilEventPayloads, keyof SharedEventPayloads>;

/** The events of each mode that are its own (not sent by every mode). */
export interface ModeEventPayloads {
  council: CouncilOwnEventPayloads;
  vote: VoteEventPayloads;
  jury: JuryEventPayloads;
  debate: DebateEventPayloads;
  delphi: DelphiEventPayloads;
}

/** Stored events every mode sends: the mode documents' shared ones and the extension events. */
export interface SharedEventPayloads extends ExtensionEventPayloads {
  title_complete: { data: { title: string } };
  complete: NoPayload;
  error: ErrorPayload;
}

export type ModeOwnEventType<M extends ModeName> = keyof ModeEventPayloads[M] & string;
export type SharedEventType = keyof SharedEventPayloads & string;

/** One event of a payload table, typed by its `type`. */
export type TypedEventOf<Table, T extends keyof Table & string> = EventEnvelope & { type: T } & Table[T];

/** The discriminated union of the events of a payload table. */
export type EventUnionOf<Table> = { [T in keyof Table & string]: TypedEventOf<Table, T> }[keyof Table &
  string];

/** A mode's own events, as a discriminated union on `type`. */
export type ModeOwnEvent<M extends ModeName> = EventUnionOf<ModeEventPayloads[M]>;

/** The events every mode sends, as a discriminated union on `type`. */
export type SharedEvent = EventUnionOf<SharedEventPayloads>;

/** Every stored event a deliberation of mode `M` may send. */
export type ModeEvent<M extends ModeName> = ModeOwnEvent<M> | SharedEvent;

/** Every stored event of any mode. */
export type AnyModeEvent = { [M in ModeName]: ModeOwnEvent<M> }[ModeName] | SharedEvent;
