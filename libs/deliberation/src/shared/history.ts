import type { ChatMessage } from '@conclave/llm';
import type { HistoryTurn } from '../engine/types';

/** The last `maxTurns` completed exchanges, oldest first, as chat messages. */
export function historyMessages(history: HistoryTurn[], maxTurns = 10): ChatMessage[] {
  return history.slice(-maxTurns).flatMap((turn): ChatMessage[] => [
    { role: 'user', content: turn.question },
    { role: 'assistant', content: turn.answer },
  ]);
}
