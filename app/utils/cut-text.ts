/**
 * `s` cut to `n` characters, with "…" where it was cut. Page text is cut this way on its way to
 * an answer: the mark tells the secret masking (app/models/secret-mask.server.ts) that the end of
 * what comes before it may be the start of a secret's value, and takes that out too.
 */
export const cutText = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n)}…` : s);
