import { displayTitle, groupConversations, type BatchGroup, type ConversationSummary } from './conversations';

function StatusBadge({ status }: { status: string | null }) {
  if (!status) return null;
  return <span className={`badge status status-${status}`}>{status}</span>;
}

function Entry({ conversation, active }: { conversation: ConversationSummary; active: boolean }) {
  return (
    <li className={active ? 'entry active' : 'entry'} data-conversation-id={conversation.id}>
      <a href={`#/c/${conversation.id}`} aria-current={active ? 'page' : undefined}>
        <span className="entry-title">{displayTitle(conversation)}</span>
        <span className="entry-meta">
          <span className="badge">{conversation.mode}</span> <StatusBadge status={conversation.lastStatus} />
        </span>
      </a>
    </li>
  );
}

function Group({
  group,
  activeConversation,
  activeBatch,
}: {
  group: BatchGroup;
  activeConversation: string | null;
  activeBatch: string | null;
}) {
  const holdsActive = group.items.some((c) => c.id === activeConversation);
  const done = group.items.filter((c) => c.lastStatus === 'complete').length;
  return (
    <li className="batch-group" data-batch-id={group.batchId}>
      <details open={holdsActive || undefined}>
        <summary>
          <span className="entry-title">{group.name ?? `Batch ${group.batchId.slice(0, 8)}`}</span>
          <span className="entry-meta">
            <span className="badge">
              {done}/{group.items.length}
            </span>{' '}
            <StatusBadge status={group.status} />
          </span>
        </summary>
        <a
          className="batch-page-link"
          href={`#/batches/${group.batchId}`}
          aria-current={activeBatch === group.batchId ? 'page' : undefined}
        >
          Batch page
        </a>
        <ul>
          {group.items.map((c) => (
            <Entry key={c.id} conversation={c} active={c.id === activeConversation} />
          ))}
        </ul>
      </details>
    </li>
  );
}

/** The conversations, newest first; a batch's items folded into one group that links to its page. */
export function ConversationList({
  conversations,
  activeConversation,
  activeBatch,
}: {
  conversations: ConversationSummary[];
  activeConversation: string | null;
  activeBatch: string | null;
}) {
  const entries = groupConversations(conversations);
  if (entries.length === 0) return <p className="muted empty">No conversations yet.</p>;
  return (
    <ul className="conversation-list">
      {entries.map((entry) =>
        entry.kind === 'batch' ? (
          <Group
            key={entry.batchId}
            group={entry}
            activeConversation={activeConversation}
            activeBatch={activeBatch}
          />
        ) : (
          <Entry
            key={entry.conversation.id}
            conversation={entry.conversation}
            active={entry.conversation.id === activeConversation}
          />
        ),
      )}
    </ul>
  );
}
