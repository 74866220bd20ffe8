/**
 * A base URL's user and password taken out: the URL without them, and them as a Basic
 * `Authorization` value and the bare password (for redacting it from messages); nulls without.
 */
export function withoutCredentials(url: URL): {
  url: URL;
  basicAuth: string | null;
  password: string | null;
} {
  const bare = new URL(url.toString());
  if (bare.username === '' && bare.password === '') return { url: bare, basicAuth: null, password: null };
  const user = decodePart(bare.username);
  const password = decodePart(bare.password);
  bare.username = '';
  bare.password = '';
  return {
    url: bare,
    basicAuth: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
    password: password || null,
  };
}

/** A percent-encoded URL part, or the part as it is when it does not decode. */
function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
