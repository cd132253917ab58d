import type { BoxJson } from "~/models/box.server";
import { BOX_LABELS_MAX, BOX_LABEL_KEY, BOX_LABEL_VALUE_MAX } from "~/protocol/box-console";
import { boxTitle } from "./box-name";

// The box list's filter, search and sort, read from and written to the page's query string
// (`?q=…&state=…&label=k=v&sort=…`), so a reload or a shared link keeps them. Applied in the
// page to the live list: changing them fetches nothing.

/**
 * What the list shows of a box: the loader sends only this (no spec, placement, start log), so
 * 80 boxes cost the page little to carry and parse. A full BoxJson from the live socket is one.
 */
export type ListBox = Pick<
  BoxJson,
  "id" | "state" | "reason" | "screens" | "width" | "height" | "created_at_ms" | "expires_at_ms" | "owner" | "name" | "labels" | "created_by"
> & { start?: Omit<NonNullable<BoxJson["start"]>, "log"> };

export function toListBox(b: BoxJson): ListBox {
  const { id, state, reason, screens, width, height, created_at_ms, expires_at_ms, owner, name, labels, created_by, start } = b;
  return {
    id, state, screens, width, height, created_at_ms, expires_at_ms, labels,
    ...(reason !== undefined && { reason }),
    ...(owner !== undefined && { owner }),
    ...(name !== undefined && { name }),
    ...(created_by !== undefined && { created_by }),
    // A starting box's phases and build step (for its progress bar); the phase alone otherwise.
    ...(start !== undefined && {
      start: state === "starting" ? { phase: start.phase, phases: start.phases, ...(start.build && { build: start.build }) } : { phase: start.phase, phases: [] },
    }),
  };
}

export const SORTS = {
  newest: "Newest first",
  oldest: "Oldest first",
  name: "Name",
  expiry: "Expires soonest",
  state: "State",
} as const;
export type Sort = keyof typeof SORTS;

/** The states a person filters by, in the order the list sorts them ("state" sort). */
export const STATE_ORDER = ["starting", "ready", "paused", "stopped", "unreachable", "failed"] as const;

export interface ListQuery {
  q: string;
  state: string;
  /** `key=value` of one label. */
  label: string;
  sort: Sort;
}

export function readListQuery(params: URLSearchParams): ListQuery {
  const sort = params.get("sort") ?? "";
  return {
    q: params.get("q") ?? "",
    // A state the list never shows (a mistyped link) filters nothing, as the State select shows.
    state: (STATE_ORDER as readonly string[]).includes(params.get("state") ?? "") ? params.get("state")! : "",
    label: params.get("label") ?? "",
    sort: sort in SORTS ? (sort as Sort) : "newest",
  };
}

/** The query string for `query`, leaving out what is at its default. */
export function writeListQuery(params: URLSearchParams, query: Partial<ListQuery>): URLSearchParams {
  const next = new URLSearchParams(params);
  // React Router's mark of a form posted to the list's own (index) route: not the list's.
  next.delete("index");
  for (const [k, v] of Object.entries(query)) {
    if (!v || (k === "sort" && v === "newest")) next.delete(k);
    else next.set(k, v);
  }
  return next;
}

export const labelText = (key: string, value: string) => (value === "" ? key : `${key}=${value}`);

/** Every label on these boxes, as `key=value`, sorted. */
export function labelsOf(boxes: ListBox[]): string[] {
  const all = new Set<string>();
  for (const b of boxes) for (const [k, v] of Object.entries(b.labels)) all.add(labelText(k, v));
  return [...all].sort();
}

function hasLabel(box: ListBox, label: string): boolean {
  const i = label.indexOf("=");
  const key = i === -1 ? label : label.slice(0, i);
  const value = i === -1 ? "" : label.slice(i + 1);
  return key in box.labels && box.labels[key] === value;
}

/** What a search matches: the name, the id, each label and the creator's name. */
function haystack(box: ListBox): string {
  const labels = Object.entries(box.labels).map(([k, v]) => labelText(k, v));
  return [box.name ?? "", box.id, ...labels, box.created_by?.name ?? ""].join("\n").toLowerCase();
}

const stateRank = (s: string) => {
  const i = (STATE_ORDER as readonly string[]).indexOf(s);
  return i === -1 ? STATE_ORDER.length : i;
};

const COMPARE: Record<Sort, (a: ListBox, b: ListBox) => number> = {
  newest: (a, b) => b.created_at_ms - a.created_at_ms,
  oldest: (a, b) => a.created_at_ms - b.created_at_ms,
  // Named boxes first, by name; unnamed ones after, newest first.
  name: (a, b) =>
    a.name && b.name ? a.name.localeCompare(b.name, undefined, { sensitivity: "base", numeric: true }) : a.name ? -1 : b.name ? 1 : b.created_at_ms - a.created_at_ms,
  expiry: (a, b) => a.expires_at_ms - b.expires_at_ms,
  state: (a, b) => stateRank(a.state) - stateRank(b.state) || boxTitle(a).localeCompare(boxTitle(b)),
};

export function applyListQuery(boxes: ListBox[], query: ListQuery): ListBox[] {
  const words = query.q.toLowerCase().split(/\s+/).filter(Boolean);
  const out = boxes.filter(
    (b) =>
      (!query.state || b.state === query.state) &&
      (!query.label || hasLabel(b, query.label)) &&
      (words.length === 0 || words.every((w) => haystack(b).includes(w))),
  );
  // Ties keep the newest first, so the order never jumps between renders.
  return out.sort((a, b) => COMPARE[query.sort](a, b) || b.created_at_ms - a.created_at_ms || a.id.localeCompare(b.id));
}

export const isFiltered = (q: ListQuery) => q.q !== "" || q.state !== "" || q.label !== "";

/** `team=web, env` → {team: "web", env: ""}; undefined when a part is not `key` or `key=value`. */
export function parseLabelsText(text: string): Record<string, string> | undefined {
  // No prototype: `out["__proto__"] = …` on a plain object sets nothing and the label would be
  // lost in silence; here it is an own key, which the /v1 schema check refuses by name.
  const out: Record<string, string> = Object.create(null);
  for (const part of text.split(/[,\n]/)) {
    const p = part.trim();
    if (!p) continue;
    const i = p.indexOf("=");
    const key = (i === -1 ? p : p.slice(0, i)).trim();
    if (!key) return undefined;
    out[key] = i === -1 ? "" : p.slice(i + 1).trim();
  }
  return out;
}

const KEY_RULE = "A key is 1 to 63 lowercase letters, digits, dots, dashes, underscores or slashes, starting with a letter or digit.";

/**
 * What is wrong with labels a person typed (`team=web, env=dev`), in words for them, or undefined
 * when the /v1 schema will take them. Checked before the schema, whose message names the request
 * field (`metadata.labels.team web: …`), which the person never wrote.
 */
export function labelsProblem(text: string): string | undefined {
  const parts = text.split(/[,\n]/).map((p) => p.trim()).filter(Boolean);
  for (const p of parts) {
    const i = p.indexOf("=");
    const key = (i === -1 ? p : p.slice(0, i)).trim();
    const value = i === -1 ? "" : p.slice(i + 1).trim();
    if (i === -1 && !BOX_LABEL_KEY.test(key)) return `Write each label as key=value, separated by commas: “${p}” has no “=”. ${KEY_RULE}`;
    if (!key) return `“${p}” has no key before its “=”: write each label as key=value, separated by commas.`;
    if (!BOX_LABEL_KEY.test(key)) return `“${key}” cannot be a label key. ${KEY_RULE}`;
    if (value.length > BOX_LABEL_VALUE_MAX) return `The value of “${key}” is longer than ${BOX_LABEL_VALUE_MAX} characters.`;
  }
  if (parts.length > BOX_LABELS_MAX) return `A box has at most ${BOX_LABELS_MAX} labels.`;
  return undefined;
}
