// The folded view of a text that secret masking compares (secret-mask.server.ts). Pages change
// what is typed into them before an answer shows it: a card number grouped in fours, an IBAN
// upper-cased, CSS text-transform, a form's or the URL parser's percent-encoding, JSON's \u
// escapes, another Unicode normal form. Listing every form of a value cannot keep up with that,
// so both the value and the text are folded the same way, and the value is looked for in the
// folded text; each folded character keeps where it came from, so the original span is masked.
// Folding, per character of the text:
// - `%XX` (a UTF-8 sequence of them) is the character it encodes; `&amp;`, `&#39;` and the other
//   HTML character references are theirs; `\uXXXX` (a surrogate pair too) is its character,
//   behind any number of backslashes (JSON inside JSON);
// - a backslash otherwise is nothing (JSON's `\"` `\/`, Turndown's `\*`), and `\n` `\t` `\r`
//   `\b` `\f` are separators;
// - a character is its compatibility decomposition (NFKD) without combining marks, lower-cased
//   (`ß` is `ss`, as upper-casing makes it): `Ä`, `ä` and `a` + U+0308 fold alike;
// - separators fold to nothing: whitespace, control and format characters, dashes, `.`, `/`,
//   `+` (a form's space), `(` and `)`.

/** A text folded: `text`, and for each of its characters the span of the original it came from. */
export interface Folded {
  text: string;
  start: Int32Array;
  end: Int32Array;
}

const SEPARATORS = " \t\n\r\f\v-./+()";
/** Each ASCII character folded (lower-cased, or "" for a separator). */
const ASCII: string[] = Array.from({ length: 128 }, (_, c) =>
  c < 0x20 || c === 0x7f || SEPARATORS.includes(String.fromCharCode(c)) ? "" : String.fromCharCode(c).toLowerCase(),
);
/** Each ASCII character's folded code (-1: a separator), and which start an escape. */
const ASCII_CODE = Int16Array.from(ASCII, (f) => (f ? f.charCodeAt(0) : -1));
const SPECIAL = Uint8Array.from({ length: 128 }, (_, c) => (c === 0x25 || c === 0x5c || c === 0x26 ? 1 : 0));
const folds = new Map<number, string>();
const FOLDS_KEPT = 10_000;

function foldCodePoint(cp: number): string {
  if (cp < 128) return ASCII[cp]!;
  let f = folds.get(cp);
  if (f !== undefined) return f;
  f = String.fromCodePoint(cp)
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/ß/g, "ss")
    .replace(/[\s\p{Cc}\p{Cf}\p{Pd}\p{Zs}./+()]/gu, "");
  if (folds.size >= FOLDS_KEPT) folds.clear();
  folds.set(cp, f);
  return f;
}

const hexAt = (s: string, i: number, n: number): number => {
  if (i + n > s.length) return -1;
  let v = 0;
  for (let k = i; k < i + n; k++) {
    const c = s.charCodeAt(k) | 0x20;
    const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
};

const ENTITY = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|(amp|lt|gt|quot|apos|nbsp));/y;
const NAMED: Record<string, number> = { amp: 38, lt: 60, gt: 62, quot: 34, apos: 39, nbsp: 0xa0 };

/** Where the thing decodeAt read last ends (a variable, not an array per character: fold is hot). */
let after = 0;
const at = (cp: number, next: number): number => ((after = next), cp);

/** What starts at `i` in `s`: the code point it stands for (-1: a separator); `after` is where it ends. */
function decodeAt(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c === 0x25) {
    // %XX, and the continuation bytes of a UTF-8 sequence it starts.
    const b = hexAt(s, i + 1, 2);
    if (b >= 0) {
      if (b < 0x80) return at(b, i + 3);
      const more = b >= 0xf0 ? 3 : b >= 0xe0 ? 2 : b >= 0xc0 ? 1 : -1;
      let cp = b & (more === 3 ? 0x07 : more === 2 ? 0x0f : 0x1f);
      let j = i + 3;
      for (let k = 0; k < more; k++, j += 3) {
        const cb = s.charCodeAt(j) === 0x25 ? hexAt(s, j + 1, 2) : -1;
        if ((cb & 0xc0) !== 0x80) return at(-1, i + 3);
        cp = (cp << 6) | (cb & 0x3f);
      }
      return more < 0 || cp > 0x10ffff ? at(-1, i + 3) : at(cp, j);
    }
  } else if (c === 0x5c) {
    // Backslashes: an escape (any number of them, as JSON in JSON doubles them) or nothing.
    let j = i;
    while (s.charCodeAt(j) === 0x5c) j++;
    const e = s.charCodeAt(j);
    if (e === 0x75) {
      const u = hexAt(s, j + 1, 4);
      if (u >= 0) {
        // A surrogate pair is two escapes.
        if (u >= 0xd800 && u < 0xdc00 && s.charCodeAt(j + 5) === 0x5c) {
          let k = j + 5;
          while (s.charCodeAt(k) === 0x5c) k++;
          const lo = s.charCodeAt(k) === 0x75 ? hexAt(s, k + 1, 4) : -1;
          if (lo >= 0xdc00 && lo < 0xe000) return at(0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00), k + 5);
        }
        return at(u, j + 5);
      }
    }
    if (e === 0x6e || e === 0x74 || e === 0x72 || e === 0x62 || e === 0x66) return at(-1, j + 1);
    return at(-1, j);
  } else if (c === 0x26) {
    ENTITY.lastIndex = i;
    const m = ENTITY.exec(s);
    if (m) {
      const cp = m[3] ? NAMED[m[3]]! : m[1] ? Number(m[1]) : parseInt(m[2]!, 16);
      return at(cp > 0x10ffff ? -1 : cp, ENTITY.lastIndex);
    }
  } else if (c >= 0xd800 && c < 0xdc00) {
    const cp = s.codePointAt(i)!;
    return at(cp, cp > 0xffff ? i + 2 : i + 1);
  }
  return at(c, i + 1);
}

/** `s` folded, with where each folded character came from (`spans` false: the text only, faster). */
export function fold(s: string, spans = true): Folded {
  const n = s.length;
  // Room for every character of `s` folding to one at most; a character that folds to more
  // (ß, ligatures) makes more room first, so the plain path below never needs to look.
  let out = new Uint16Array(n + 8);
  let start = new Int32Array(spans ? n + 8 : 0);
  let end = new Int32Array(spans ? n + 8 : 0);
  let len = 0;
  for (let i = 0; i < n; ) {
    const c = s.charCodeAt(i);
    // Most text is plain ASCII: no decoding, one table look-up.
    if (c < 128 && !SPECIAL[c]) {
      const f = ASCII_CODE[c]!;
      if (f >= 0) {
        if (spans) {
          start[len] = i;
          end[len] = i + 1;
        }
        out[len++] = f;
      }
      i++;
      continue;
    }
    const cp = decodeAt(s, i);
    const next = after;
    if (cp >= 0) {
      const f = foldCodePoint(cp);
      if (len + f.length + (n - next) > out.length) {
        const room = 2 * (len + f.length + (n - next));
        out = grown(out, new Uint16Array(room));
        if (spans) {
          start = grown(start, new Int32Array(room));
          end = grown(end, new Int32Array(room));
        }
      }
      for (let k = 0; k < f.length; k++) {
        if (spans) {
          start[len] = i;
          end[len] = next;
        }
        out[len++] = f.charCodeAt(k);
      }
    }
    i = next;
  }
  const text = Buffer.from(out.buffer, 0, len * 2).toString("utf16le");
  return { text, start: start.subarray(0, len), end: end.subarray(0, len) };
}

function grown<T extends Uint16Array | Int32Array>(from: T, to: T): T {
  to.set(from);
  return to;
}

/** The folded text of `s` alone. */
export const folded = (s: string): string => fold(s, false).text;

/** The spans of `s` (start, end; in order, joined where they meet) where any of `keys` is in its folded view. */
export function foldedSpans(s: string, keys: readonly string[]): [number, number][] {
  const f = fold(s);
  const found: [number, number][] = [];
  for (const key of keys) {
    for (let k = f.text.indexOf(key); k >= 0; k = f.text.indexOf(key, k + 1)) found.push([f.start[k]!, f.end[k + key.length - 1]!]);
  }
  found.sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const sp of found) {
    const last = out[out.length - 1];
    if (last && sp[0] <= last[1]) last[1] = Math.max(last[1], sp[1]);
    else out.push([...sp]);
  }
  return out;
}
