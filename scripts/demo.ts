// `npm run demo [-- "your question"]`: starts a council deliberation over Socket.IO and prints
// its events as they arrive. Uses CONCLAVE_URL (default http://localhost:3000) and CONCLAVE_API_KEY.
import { io } from 'socket.io-client';

const url = process.env.CONCLAVE_URL ?? `http://localhost:${process.env.PORT ?? 3000}`;
const question =
  process.argv.slice(2).join(' ') || 'Should a five-person team split its monolith into microservices?';

interface Event {
  type: string;
  seq: number;
  [key: string]: unknown;
}

function summary(event: Event): string {
  switch (event.type) {
    case 'model_progress':
      return `${String(event.stage)} ${String(event.participant)} ${String(event.state)}${event.error ? ` (${String(event.error)})` : ''}`;
    case 'stage1_complete':
      return `${(event.data as unknown[]).length} answers`;
    case 'stage2_complete': {
      const metadata = event.metadata as { aggregateRankings: { model: string; averageRank: number }[] };
      return (
        metadata.aggregateRankings.map((a) => `${a.model} ${a.averageRank}`).join(', ') ||
        'no parseable ranking'
      );
    }
    case 'stage3_complete':
      return `\n${(event.data as { response: string }).response}\n`;
    case 'title_complete':
      return (event.data as { title: string }).title;
    case 'error':
      return String(event.message);
    default:
      return '';
  }
}

const socket = io(`${url}/deliberations`, {
  transports: ['websocket'],
  auth: process.env.CONCLAVE_API_KEY ? { token: process.env.CONCLAVE_API_KEY } : {},
});
socket.on('connect_error', (error) => {
  console.error(`could not connect to ${url}: ${error.message}`);
  process.exit(1);
});
socket.on('connect', async () => {
  console.log(`question: ${question}`);
  const accepted = await socket.emitWithAck('deliberate', { question });
  if (accepted.error) {
    console.error(`refused: ${JSON.stringify(accepted.error)}`);
    process.exit(1);
  }
  console.log(`conversation ${accepted.conversationId}, message ${accepted.messageId}`);
  socket.onAny((name: string, event: Event) => {
    console.log(`#${event.seq} ${name} ${summary(event)}`);
    if (name === 'complete' || name === 'error') {
      socket.disconnect();
      process.exit(name === 'complete' ? 0 : 1);
    }
  });
  await socket.emitWithAck('subscribe', { messageId: accepted.messageId });
});
