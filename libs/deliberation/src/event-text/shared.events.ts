import {
  RESUME_REASON_TEXT,
  resumedLine,
  type ModelProgressPayload,
  type ResumedPayload,
  type SharedEventPayloads,
} from '@conclave/contracts';
import type { EventReading, EventTextTable, ReadingContext } from './reading';
import { callDid } from './registry';
import { oneLine, participantLabel, stageLabel, str } from './wording';

/** How the events every mode sends read (the mode documents' shared ones and the extension events). */

const MAX_ERROR = 160;

/** `Resuming stage2 (the worker running it stopped).`: a sentence for `reasoning` and the web. */
const resumedSentence = ({ stage, reason }: ResumedPayload): string => {
  const line = resumedLine({ stage, reason });
  return `${line.charAt(0).toUpperCase()}${line.slice(1)}.`;
};

function cliCall(event: ModelProgressPayload): string {
  const head = `[${stageLabel(event.stage)}] ${participantLabel(event.participant, 'cli')}`;
  const took = event.responseTimeMs !== undefined ? ` (${event.responseTimeMs} ms)` : '';
  switch (event.state) {
    case 'succeeded':
      return `${head} succeeded${took}`;
    case 'failed':
      return `${head} failed${took}: ${event.error ?? 'unknown error'}`;
    case 'retrying':
      return `${head} retrying: ${event.error ?? 'transient error'}`;
    default:
      return `${head} started`;
  }
}

/** MCP: a retry, or a settled call with its stage's count (ReadingContext.count); a start is no line. */
function mcpCall(event: ModelProgressPayload, { count }: ReadingContext): string | null {
  const label = stageLabel(event.stage);
  const who = participantLabel(event.participant, 'mcp');
  switch (event.state) {
    case 'retrying':
      return `${label}: ${who} retrying (${event.error ?? 'transient error'})`;
    case 'succeeded':
      return `${label}: ${who} answered${count ? ` ${count}` : ''}`;
    case 'failed':
      return `${label}: ${who} failed${count ? ` ${count}` : ''}: ${event.error ?? 'unknown error'}`;
    default:
      return null;
  }
}

/**
 * `reasoning`: a call that failed, was cut or stopped, retried or succeeded. Delphi panelists are
 * numbered and their error texts left out (they may name the model); a juror's success is said by
 * its own event, and the final text is streamed as it is written.
 */
function reasoningCall(event: ModelProgressPayload, { mode, finalStage }: ReadingContext): string[] {
  const stage = str(event.stage) ?? '';
  const state = str(event.state);
  const who = participantLabel(event.participant, 'reasoning');
  const delphiPanelist = mode === 'delphi' && typeof event.participant === 'number';
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
  if (stage === 'deliberation' || stage === finalStage) return [];
  const ms = event.responseTimeMs;
  const took = typeof ms === 'number' && Number.isFinite(ms) ? ` (${(ms / 1000).toFixed(1)} s)` : '';
  return [`${who} ${callDid(stage)}${took}.`];
}

const modelProgress: EventReading<ModelProgressPayload> = {
  cli: (e) => cliCall(e),
  mcp: (e, context) => mcpCall(e, context),
  reasoning: (e, context) => reasoningCall(e, context),
  // The timeline shows each call's state in its own structure (apps/web/src/timeline.ts).
  web: null,
};

export const sharedEventText: EventTextTable<SharedEventPayloads> = {
  model_progress: modelProgress,
  title_complete: {
    cli: (e) => `title: ${e.data.title}`,
    mcp: () => 'title written',
    reasoning: null,
    web: null,
  },
  complete: { cli: () => 'complete', mcp: () => 'complete', reasoning: null, web: null },
  // The CLI prints `error: …` (or the cancellation's reason) itself; the web shows the message.
  error: { cli: null, mcp: (e) => `failed: ${e.message}`, reasoning: null, web: null },
  cancelled: { cli: null, mcp: (e) => `cancelled: ${e.reason}`, reasoning: null, web: null },
  // An extension event: the stage was interrupted (a worker stopped, the queue was lost) and runs again.
  resumed: {
    cli: (e) => `[${stageLabel(e.stage)}] resuming (${RESUME_REASON_TEXT[e.reason] ?? 'interrupted'})`,
    mcp: ({ stage, reason }) => resumedLine({ stage, reason }),
    reasoning: (e) => resumedSentence(e),
    web: (e) => resumedSentence(e),
  },
};
