/**
 * The channel on which PostgreSQL announces every stop: `NOTIFY conclave_stops, '<message id>'`,
 * sent by a trigger on `messages` in the transaction that stores a deliberation as cancelled (a
 * user's stop, a batch's cancel, an admin's or the command line's cancel of someone's work, a key's
 * revocation, and any later writer). So it reaches every worker that LISTENs when, and only when,
 * the stop commits, whether or not the process that stopped it could reach Redis. A channel is per
 * database. One notice per deliberation: a payload is a uuid, far below NOTIFY's 8000 bytes.
 */
export const STOP_CHANNEL = 'conclave_stops';

/**
 * The live text of the trigger's function, its one home; migration 1764710000000 carries the text
 * it ran, frozen (and creates the trigger: AFTER UPDATE OF status ON messages, for a row that
 * becomes `cancelled`).
 */
export const STOP_NOTICE_FUNCTION = `
CREATE OR REPLACE FUNCTION conclave_notify_stop() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify('conclave_stops', NEW.id::text);
  RETURN NULL;
END
$fn$`;
