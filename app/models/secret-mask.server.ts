import { loadRow } from "./box-record.server";
import { fold, folded, foldedSpans } from "./secret-fold.server";
import { secretValue, secretValues } from "./secret-store.server";
import { rememberTyped, typedValues } from "./secret-typed.server";

// Seed 004: a secret is typed "without it ever reaching your client, logs, or model context". A
// page can put a typed value anywhere: copy it into another field or its title, send it in a
// URL, log it, show it in a window's title; the agent's next read would carry it back. So every
// /v1 answer about a box (its pages, screens, files, exec, trace; not the box resource itself)
// has the values of its workspace's secrets, and of those typed into it since, replaced by dots,
// error messages included (app/edge/route.server.ts). A value is looked for as it is, with its
// runs of whitespace made one space (as accessibility names and page text show it),
// URL-encoded, as JSON text, HTML-escaped (a raw read) and markdown-escaped (Turndown's
// backslashes); a value under 4 characters only where it is a whole string. Pages also change
// what is typed before showing it (a card number grouped, an IBAN upper-cased, a form's
// encoding, JSON's \u escapes, another normal form): a value whose folded form
// (secret-fold.server.ts) has FOLD_MIN characters or more is also looked for in the text's
// folded view, and the span it came from is masked. A control's value (an element's `value`)
// that folds to a part of a value's folded form, CONTROL_MIN characters or more, is masked
// whole: a field's maxlength cuts what is typed. Masking protects against reading a secret back
// by accident, not against code run in the box on purpose (exec, evaluate, CDP): that code can
// encode what it reads.

export const MASK = "••••••";
/** Shorter values are masked only where they are a whole string: "abc" inside words is no leak. */
const MIN_INSIDE = 4;
/**
 * Shorter folded values are not looked for in folded text: with separators gone, "12-34" and
 * the like would be found in too much that is no secret.
 */
const FOLD_MIN = 6;
/** A control's value folding to fewer characters is not masked for being part of a value. */
const CONTROL_MIN = 4;

export interface Masker {
  /** The forms looked for inside strings (at least MIN_INSIDE characters), longest first. */
  inside: string[];
  /** Every form, for whole strings. */
  whole: Set<string>;
  /** The values' folded forms of FOLD_MIN characters or more, longest first. */
  folded: string[];
  /** Every value's folded form (a control's value that is part of one is masked whole). */
  keys: string[];
}

// Boxes never change owners once they are anyone's (a pool box is no one's until claimed, and
// answers nothing before): the owner is read once per box.
const owners = new Map<string, string | null>();
const OWNERS_KEPT = 20_000;

async function ownerOfBox(id: string): Promise<string | null | undefined> {
  if (owners.has(id)) return owners.get(id);
  const row = /^box_[0-9a-f]{8,64}$/.test(id) ? await loadRow(id) : undefined;
  if (!row || row.pooled) return undefined;
  if (owners.size >= OWNERS_KEPT) owners.delete(owners.keys().next().value!);
  owners.set(id, row.owner);
  return row.owner;
}

/**
 * Remembers a value typed into a box from a secret: still masked after the secret changes or
 * goes, after a restart and on every server (kept in the store, secret-typed.server.ts).
 */
export function noteTyped(boxId: string, value: string): Promise<void> {
  return rememberTyped(boxId, value);
}

/** A secret's value to type into box `boxId`, remembered there for masking. */
export async function secretToType(owner: string | null, name: string, boxId?: string): Promise<string> {
  const value = await secretValue(owner, name);
  if (boxId) await noteTyped(boxId, value);
  return value;
}

/** The forms of a value an answer may show it in. */
function formsOf(value: string): string[] {
  const out = new Set([value]);
  const collapsed = value.replace(/\s+/g, " ").trim();
  if (collapsed) out.add(collapsed);
  // As a JSON text shows it: an evaluate's value cut to its limit is its JSON text.
  out.add(JSON.stringify(value).slice(1, -1));
  const url = encodeURIComponent(value);
  out.add(url);
  out.add(url.replace(/%20/g, "+"));
  for (const v of collapsed && collapsed !== value ? [value, collapsed] : [value]) {
    // As a page's HTML shows it (`?format=raw`): text escapes & < > (and a no-break space),
    // an attribute value & and " (and, in newer Chromium, < and > too).
    const amp = v.replace(/&/g, "&amp;").replace(/\u00a0/g, "&nbsp;");
    out.add(amp.replace(/</g, "&lt;").replace(/>/g, "&gt;"));
    out.add(amp.replace(/"/g, "&quot;"));
    out.add(amp.replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;"));
    // As the markdown read shows it: Turndown puts a backslash before \ * _ ` [ ], and before a
    // few marks (- + = # ~~~ > "1. ") where a line starts.
    const md = v.replace(/[\\*_`[\]]/g, "\\$&");
    out.add(md);
    out.add(md.replace(/^(-|\+ |=+|#{1,6} |~~~|>)/, "\\$1").replace(/^(\d+)\. /, "$1\\. "));
  }
  return [...out];
}

/** What to take out of answers about box `id`; undefined when there is nothing to take out. */
export async function maskerFor(id: string): Promise<Masker | undefined> {
  const owner = await ownerOfBox(id);
  if (owner === undefined) return undefined;
  const [stored, mine] = await Promise.all([secretValues(owner), typedValues(id)]);
  if (!mine?.size) {
    if (!stored.length) return undefined;
    // The owner's values stay one array until they change: built once for every answer till then.
    let m = built.get(stored);
    if (!m) built.set(stored, (m = maskerOf(stored)));
    return m;
  }
  return maskerOf([...stored, ...mine]);
}

const built = new WeakMap<readonly string[], Masker>();

/** What to take out for these values. */
export function maskerOf(values: readonly string[]): Masker {
  const whole = new Set<string>();
  for (const v of values) for (const f of formsOf(v)) whole.add(f);
  const inside = [...whole].filter((f) => f.length >= MIN_INSIDE).sort((a, b) => b.length - a.length);
  const keys = [...new Set(values.map(folded))].filter(Boolean).sort((a, b) => b.length - a.length);
  return { inside, whole, folded: keys.filter((k) => k.length >= FOLD_MIN), keys };
}

/**
 * `s` with every form of every value replaced by MASK. Where text was cut (a "…" marks it), the
 * start of a value just before the mark is a value too: "Bq7sEcr3t…" shows no part of it.
 */
export function maskText(m: Masker, s: string): string {
  if (m.whole.has(s)) return MASK;
  for (const f of m.inside) if (s.includes(f)) s = s.split(f).join(MASK);
  s = maskFolded(m, s);
  if (!s.includes("…")) return s;
  // A "…" may be the page's own ("Loading…"): there only a value's start as it is, not folded
  // (which would take "your Account…" for the start of "account-9931").
  const parts = s.split("…");
  for (let i = 0; i < parts.length - 1; i++) parts[i] = maskCutEnd(m, parts[i]!, false);
  return parts.join("…");
}

/** `s` with every span whose folded view is a value's folded form replaced by MASK. */
function maskFolded(m: Masker, s: string): string {
  if (!m.folded.length || s.length < FOLD_MIN) return s;
  const spans = foldedSpans(s, m.folded);
  if (!spans.length) return s;
  let out = "";
  let at = 0;
  for (const [a, b] of spans) {
    out += `${s.slice(at, a)}${MASK}`;
    at = b;
  }
  return out + s.slice(at);
}

/**
 * A control's value: masked whole where it folds to a value's start (a `maxlength` keeps the
 * start of what is typed). Only the start: a year or a word found inside a password ("2024" in
 * "Summer2024!") is a select's or a search field's own value far more often than a leak.
 */
function maskControl(m: Masker, s: string): string {
  const f = folded(s);
  if (f.length >= CONTROL_MIN && m.keys.some((k) => k.startsWith(f))) return MASK;
  return maskText(m, s);
}

/**
 * `s`, cut after its last character (an answer's `cut` content or value, a "…"), with a value's
 * start at its end (MIN_INSIDE characters or more, as it is or folded) replaced by MASK.
 */
export function maskCutEnd(m: Masker, s: string, foldToo = true): string {
  for (const f of m.inside) {
    for (let k = Math.min(f.length - 1, s.length); k >= MIN_INSIDE; k--) {
      if (s.endsWith(f.slice(0, k))) return `${s.slice(0, -k)}${MASK}`;
    }
  }
  if (!foldToo || !m.keys.length) return s;
  const f = fold(s);
  for (const key of m.keys) {
    for (let k = Math.min(key.length - 1, f.text.length); k >= MIN_INSIDE; k--) {
      if (f.text.endsWith(key.slice(0, k))) return `${s.slice(0, f.start[f.text.length - k])}${MASK}`;
    }
  }
  return s;
}

/**
 * An image's bytes (`png_base64`; a file read's are text: FILE_BYTES): not text a page shows. Folded
 * (case and `+`, `/` dropped), a megabyte of base64 holds a given 6-character value about once in
 * a thousand answers, and dots there would break the image; folding it also cost ~10 ms a MB.
 */
const BASE64_FIELD = /"[a-z_]*_base64":"[A-Za-z0-9+/=]*"/g;

/** A file read's bytes (`GET …/files`, a batch's `read_file`): masked as text (`maskFileBytes`). */
const FILE_BYTES = "contents_base64";
const FILE_READ = /"contents_base64":"[^"]/;

/** Whether a JSON text may hold a value (a cheap look before parsing it again). */
export function mayHold(m: Masker, json: string): boolean {
  if (FILE_READ.test(json)) return true;
  json = json.replace(BASE64_FIELD, '""');
  if (json.includes("…") || json.includes('"cut":true')) return true;
  for (const f of m.whole) if (json.includes(JSON.stringify(f).slice(1, -1))) return true;
  // The folded view of the JSON text is that of its strings (the fold reads JSON's escapes,
  // doubled or not), and no value's folded form reaches from one string into the next.
  if (m.folded.length) {
    const view = folded(json);
    if (m.folded.some((k) => view.includes(k))) return true;
  }
  for (const [, v] of json.matchAll(/"value":"((?:[^"\\]|\\.)*)"/g)) {
    const f = folded(v!);
    if (f.length >= CONTROL_MIN && m.keys.some((k) => k.startsWith(f))) return true;
  }
  return false;
}

/**
 * A JSON value with every string (and every key) masked. `control`: `v` is (what was) an
 * element's state, whose `value` is a control's.
 */
export function maskDeep(m: Masker, v: unknown, control = false): unknown {
  if (typeof v === "string") return maskText(m, v);
  if (Array.isArray(v)) return v.map((x) => maskDeep(m, x));
  if (v && typeof v === "object") {
    // An element as snapshots, finds and element answers show it has a role; `was` is its
    // state before an operation.
    const element = control || typeof (v as { role?: unknown }).role === "string";
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === FILE_BYTES && typeof x === "string") {
        out[k] = maskFileBytes(m, x);
        continue;
      }
      if (k.endsWith("_base64") && typeof x === "string") {
        out[k] = x;
        continue;
      }
      out[maskText(m, k)] = element && k === "value" && typeof x === "string" ? maskControl(m, x) : maskDeep(m, x, element && k === "was");
    }
    // A masked file's `bytes` says how many the answer carries.
    const file = (v as Record<string, unknown>)[FILE_BYTES];
    if (typeof file === "string" && out[FILE_BYTES] !== file && typeof out.bytes === "number") {
      out.bytes = Buffer.from(out[FILE_BYTES] as string, "base64").length;
    }
    // A read's `content` or an evaluate's `value` cut to its `limit` ends where it was cut.
    if ((v as { cut?: unknown }).cut === true) {
      for (const k of ["content", "value"]) if (typeof out[k] === "string") out[k] = maskCutEnd(m, out[k] as string);
    }
    return out;
  }
  return v;
}

/**
 * A file's bytes (base64) with the values masked when the file is text. Other `_base64` fields go
 * as they are (BASE64_FIELD), but a text file's bytes are text a page or a program wrote: a
 * page's download, a log, notes holding a typed value. grep showed its lines as dots while a read
 * gave the bytes, and MCP's read_file puts them before the model as text. UTF-8 without a NUL is
 * masked as text and sent as bytes again; any other file is no text and goes as it is.
 */
function maskFileBytes(m: Masker, b64: string): string {
  const bytes = Buffer.from(b64, "base64");
  if (bytes.includes(0)) return b64;
  let text: string;
  try {
    // ignoreBOM: a BOM stays in the text, so a masked file keeps it.
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return b64;
  }
  const masked = maskText(m, text);
  return masked === text ? b64 : Buffer.from(masked, "utf8").toString("base64");
}
