// Names that people give and other people read (a box's name and labels, a person's, a key's, a
// workspace's): the console shows them where it matters ("Remove prod-db?", "Ada has control",
// "key agent-1" in a trace, the workspace switcher), so a name must show as what it holds.
//
// Both patterns are spelled as ranges: the OpenAPI document carries them, and JSON Schema's regex
// dialect has no `\p{…}` (it needs the u flag).

/** No control characters (Unicode's Cc: C0, DEL and C1). */
export const PRINTABLE = /^[^\u0000-\u001f\u007f-\u009f]*$/u;

/**
 * Nor the characters that make the console show other text than the name holds (security
 * review): direction overrides, embeddings and isolates (U+202E shows "\u202Ebd-dorp" as
 * "prod-db" and turns the rest of "Remove …?" around), the marks that steer direction, and the
 * invisible ones (zero-width space, word joiner, BOM, soft hyphen, blank fillers, line and
 * paragraph separators) that make "prod-db\u200B" look exactly like another box's "prod-db".
 * U+200C and U+200D (zero-width non-joiner and joiner) stay: Persian, Indic scripts and emoji
 * need them.
 */
export const NOT_LYING = /^[^\u00ad\u061c\u115f\u1160\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\u3164\ufeff]*$/u;

/** What is wrong with `text` as a name people read ("a key name has no control characters"), if anything. */
export function nameProblem(text: string, what: string): string | undefined {
  if (!PRINTABLE.test(text)) return `${what} has no control characters`;
  if (!NOT_LYING.test(text)) return `${what} has no invisible or direction-changing characters`;
  return undefined;
}
