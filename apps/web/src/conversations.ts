import type {
  DeliberationAccepted,
  DeliberationView,
  MessageStatus,
  ModeDescription,
  ModeName,
} from '@conclave/contracts';
import { api } from './api';

/** A conversation as `GET /api/conversations` lists it. */
export interface ConversationSummary {
  id: string;
  title: string | null;
  mode: ModeName;
  createdAt: string;
  updatedAt: string;
  turns: number;
  lastStatus: MessageStatus | null;
  /** The batch it is an item of, if any, and that batch's name. */
  batchId?: string | null;
  batchName?: string | null;
  /** The start of its first question (for jury, of the content). */
  question?: string | null;
}

/** One message of `GET /api/conversations/:id`. */
export interface ConversationMessage {
  id: string;
  role: 'user' | 'assistant';
  turn: number;
  content: string;
  status: MessageStatus;
  error: string | null;
  createdAt: string | null;
  completedAt: string | null;
  /** Assistant messages: the turn's resolved mode config (its roster among it). */
  config?: unknown;
  deliberation?: DeliberationView;
}

export interface ConversationDetail {
  id: string;
  title: string | null;
  mode: ModeName;
  createdAt: string | null;
  updatedAt: string | null;
  batchId?: string | null;
  messages: ConversationMessage[];
}

/** A turn of a thread: what was asked and the deliberation that answers it. */
export interface Turn {
  turn: number;
  /** The user's message: the question, or for jury the content under evaluation. */
  question: string;
  /** The assistant message (the deliberation's id); null while only the question is stored. */
  messageId: string | null;
  status: MessageStatus | null;
  config: Record<string, unknown> | null;
  view: DeliberationView | null;
  /** The assistant message's stored answer ('' until the deliberation completes). */
  answer: string;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The conversation's turns in order, each question with its deliberation. */
export function turnsOf(detail: ConversationDetail): Turn[] {
  const turns = new Map<number, Turn>();
  const at = (n: number): Turn => {
    let turn = turns.get(n);
    if (!turn) {
      turn = { turn: n, question: '', messageId: null, status: null, config: null, view: null, answer: '' };
      turns.set(n, turn);
    }
    return turn;
  };
  for (const m of detail.messages) {
    const turn = at(m.turn);
    if (m.role === 'user') turn.question = m.content;
    else {
      turn.messageId = m.id;
      turn.status = m.deliberation?.status ?? m.status;
      turn.config = isRecord(m.config) ? m.config : null;
      turn.view = m.deliberation ?? null;
      turn.answer = m.content;
    }
  }
  return [...turns.values()].sort((a, b) => a.turn - b.turn);
}

/**
 * A turn brought in with the conversation's history (the OpenAI-compatible API stores a chat's
 * earlier exchanges so): complete, with an answer but no model call of its own.
 */
export const isImportedTurn = (turn: Turn): boolean =>
  turn.view !== null && turn.view.status === 'complete' && turn.view.calls.length === 0 && turn.answer !== '';

const TERMINAL: readonly string[] = ['complete', 'failed', 'cancelled'];
export const isActiveStatus = (status: string | null | undefined): boolean =>
  status === 'queued' || status === 'running';
export const isTerminal = (status: string | null | undefined): boolean =>
  status !== null && status !== undefined && TERMINAL.includes(status);

/** What to call a conversation: its title, else the start of its first question. */
export function displayTitle(c: { title: string | null; question?: string | null }): string {
  if (c.title?.trim()) return c.title.trim();
  const first = c.question
    ?.split('\n')
    .map((line) => line.trim())
    .find(Boolean);
  if (!first) return 'Untitled';
  return first.length > 60 ? `${first.slice(0, 59)}…` : first;
}

/** One batch's items in the sidebar, in one group. */
export interface BatchGroup {
  kind: 'batch';
  batchId: string;
  name: string | null;
  items: ConversationSummary[];
  /** running while any item is queued or running, failed when one failed, complete when all did. */
  status: 'running' | 'failed' | 'cancelled' | 'complete';
}

export type SidebarEntry = { kind: 'conversation'; conversation: ConversationSummary } | BatchGroup;

function groupStatus(items: ConversationSummary[]): BatchGroup['status'] {
  if (items.some((c) => isActiveStatus(c.lastStatus))) return 'running';
  if (items.some((c) => c.lastStatus === 'failed')) return 'failed';
  if (items.some((c) => c.lastStatus === 'cancelled')) return 'cancelled';
  return 'complete';
}

/**
 * The sidebar's entries: conversations of their own as they come, a batch's items gathered into
 * one group at the place of its most recent item.
 */
export function groupConversations(list: ConversationSummary[]): SidebarEntry[] {
  const entries: SidebarEntry[] = [];
  const groups = new Map<string, BatchGroup>();
  for (const c of list) {
    if (!c.batchId) {
      entries.push({ kind: 'conversation', conversation: c });
      continue;
    }
    let group = groups.get(c.batchId);
    if (!group) {
      group = { kind: 'batch', batchId: c.batchId, name: c.batchName ?? null, items: [], status: 'complete' };
      groups.set(c.batchId, group);
      entries.push(group);
    }
    group.items.push(c);
  }
  for (const group of groups.values()) group.status = groupStatus(group.items);
  return entries;
}

/** Where the mode config keeps a roster or option field (`modeConfig.models` → `models`). */
const configKey = (field: string): string => field.replace(/^modeConfig\./, '');

/** A list of model ids as the roster inputs hold it. */
const asText = (value: unknown): string | null => {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join(', ');
  return null;
};

/** The roster inputs a turn's config fills in: the same models for the next turn. */
export function rosterFromConfig(description: ModeDescription, config: unknown): Record<string, string> {
  if (!isRecord(config)) return {};
  const roster: Record<string, string> = {};
  for (const role of description.roster) {
    const text = asText(config[configKey(role.field)]);
    if (text) roster[role.field] = text;
  }
  return roster;
}

/** Options a form sets apart (jury's content, Delphi's classification) rather than in "Options". */
export const SEPARATE_OPTIONS: readonly string[] = ['content', 'originalQuestion', 'options', 'questionType'];

/** The options a turn's config set to something other than their default, as the inputs hold them. */
export function optionsFromConfig(description: ModeDescription, config: unknown): Record<string, string> {
  if (!isRecord(config)) return {};
  const options: Record<string, string> = {};
  for (const option of description.options) {
    if (SEPARATE_OPTIONS.includes(option.field)) continue;
    const value = config[option.field];
    if ((typeof value === 'number' || typeof value === 'string') && value !== option.default) {
      options[option.field] = String(value);
    }
  }
  return options;
}

export const listConversations = () => api<ConversationSummary[]>('GET', '/api/conversations');
export const getConversation = (id: string) =>
  api<ConversationDetail>('GET', `/api/conversations/${encodeURIComponent(id)}`);
export const deleteConversation = (id: string) =>
  api<void>('DELETE', `/api/conversations/${encodeURIComponent(id)}`);

/**
 * What a submit leaves for the page it goes to: the conversation of each message started here (so
 * its thread opens without asking), and the turn to move the focus to once it shows.
 */
const startedIn = new Map<string, string>();
let focusNext: string | null = null;

export function noteStarted(accepted: DeliberationAccepted): void {
  startedIn.set(accepted.messageId, accepted.conversationId);
  focusNext = accepted.messageId;
}

export const conversationOfStarted = (messageId: string): string | undefined => startedIn.get(messageId);

/** Whether the turn of `messageId` is the one just started here (once: the claim clears it). */
export function claimFocus(messageId: string): boolean {
  if (focusNext !== messageId) return false;
  focusNext = null;
  return true;
}
