import type { BrowserContext, Page } from "playwright-core";
import { z } from "zod";
import { badRequest, isApiError, notFound } from "~/utils/api-error.server";
import { validate } from "~/utils/validate.server";
import { HttpUrl, scrubbed } from "./browser-cookies.server";
import { type IdbDatabase, type NameValue, readStorage, writeIndexedDb, writeStorage } from "./browser-storage-script.server";
import { pageOf } from "./page-browser.server";
import type { ScreenTarget } from "./screen.server";
import { checkName, deleteSealed, listSealed, ownerKey, readSealed, writeSealed } from "./sealed-store.server";

// Browser state (seed: Browser state): a box browser's cookies and storage, saved as JSON in
// Playwright's storage-state format (so a file from Playwright loads here, and `session_json`
// works with Playwright's `storageState` option), kept per workspace by name, sealed at rest.
// Loading adds to what the browser has (cookies are added, storage keys set, IndexedDB records
// put); nothing else is cleared.

/** Names a workspace may keep. */
export const STATES_PER_OWNER = 100;
/** The largest state, in bytes of JSON. */
export const STATE_MAX_BYTES = 16 * 1024 * 1024;

const Origin = HttpUrl.transform((s) => new URL(s).origin);

export const SaveSchema = z.strictObject({
  origins: z.array(Origin).max(100).optional(),
  name: z.string().nullable().optional(),
  session_storage: z.boolean().optional(),
  indexed_db: z.boolean().optional(),
  no_local_storage: z.boolean().optional(),
});

export const LoadSchema = z
  .strictObject({ name: z.string().optional(), session_json: z.string().max(STATE_MAX_BYTES).optional() })
  .refine((b) => (b.name === undefined) !== (b.session_json === undefined), "give `name` or `session_json`, one of them");

const NameValues = z.array(z.object({ name: z.string(), value: z.string() }));

/** The state's JSON (Playwright's format, plus sessionStorage); unknown keys pass. */
const StateSchema = z.looseObject({
  cookies: z
    .array(
      z.looseObject({
        name: z.string(),
        value: z.string(),
        domain: z.string(),
        path: z.string(),
        expires: z.number(),
        httpOnly: z.boolean(),
        secure: z.boolean(),
        sameSite: z.enum(["Strict", "Lax", "None"]),
      }),
    )
    .default([]),
  origins: z
    .array(
      z.looseObject({
        origin: z.string(),
        localStorage: NameValues.default([]),
        sessionStorage: NameValues.optional(),
        indexedDB: z.array(z.any()).optional(),
      }),
    )
    .default([]),
});

type State = z.output<typeof StateSchema>;
type OriginState = State["origins"][number];

const originOf = (url: string) => {
  try {
    const u = new URL(url);
    return u.protocol === "http:" || u.protocol === "https:" ? u.origin : undefined;
  } catch {
    return undefined;
  }
};

/** Whether a cookie of `domain` goes to `origin`'s host (its path and `secure` aside). */
function cookieFor(domain: string, origin: string): boolean {
  const host = new URL(origin).hostname;
  const d = domain.replace(/^\./, "");
  return host === d || host.endsWith(`.${d}`);
}

/** Every value in a state: what an error message must not show. */
const valuesOf = (s: Pick<State, "cookies" | "origins">) => [
  ...s.cookies.map((c) => c.value),
  ...s.origins.flatMap((o) => [...o.localStorage, ...(o.sessionStorage ?? [])].map((x) => x.value)),
];

/** Reads the browser's state as the save body asks. */
async function collect(context: BrowserContext, opts: z.output<typeof SaveSchema>): Promise<State> {
  const wanted = opts.origins?.length ? new Set(opts.origins) : undefined;
  const keep = (origin: string | undefined) => origin !== undefined && (!wanted || wanted.has(origin));
  const raw = await scrubbed("reading the browser's state", "failed", [], () => context.storageState({ indexedDB: opts.indexed_db === true }));
  const cookies = wanted ? raw.cookies.filter((c) => [...wanted].some((o) => cookieFor(c.domain, o))) : raw.cookies;
  const origins = new Map<string, OriginState>();
  for (const o of raw.origins as (OriginState & { indexedDB?: unknown[] })[]) {
    if (keep(o.origin)) origins.set(o.origin, { origin: o.origin, localStorage: o.localStorage, ...(opts.indexed_db && o.indexedDB ? { indexedDB: o.indexedDB } : {}) });
  }
  // Tabs open at an origin Playwright has not seen load (opened before the server attached):
  // their storage is read from the tab itself. So is sessionStorage, which Playwright does not save.
  for (const page of context.pages()) {
    const origin = originOf(page.url());
    if (!keep(origin)) continue;
    let entry = origins.get(origin!);
    if (!entry) {
      const localStorage = await page.evaluate(readStorage, "localStorage" as const).catch(() => [] as NameValue[]);
      entry = { origin: origin!, localStorage };
    }
    if (opts.session_storage) {
      const items = await page.evaluate(readStorage, "sessionStorage" as const).catch(() => [] as NameValue[]);
      // Two tabs of one origin: the first (front) tab's value of a key wins.
      const have = new Set((entry.sessionStorage ?? []).map((x) => x.name));
      entry.sessionStorage = [...(entry.sessionStorage ?? []), ...items.filter((x) => !have.has(x.name))];
    }
    origins.set(origin!, entry);
  }
  const out: OriginState[] = [];
  for (const o of origins.values()) {
    if (opts.no_local_storage) o.localStorage = [];
    if (o.localStorage.length || o.sessionStorage?.length || o.indexedDB?.length) out.push(o);
  }
  return { cookies, origins: out };
}

export interface SaveAnswer {
  cookies: number;
  origins: number;
  size: number;
  name?: string;
  session_json?: string;
  created_at_ms?: number;
  updated_at_ms?: number;
}

/** Saves the browser's state under `name` for `owner`, or answers it as `session_json`. */
export async function saveState(owner: string | null | undefined, context: BrowserContext, body: z.output<typeof SaveSchema>): Promise<SaveAnswer> {
  const name = body.name == null ? undefined : checkName("name", body.name);
  const state = await collect(context, body);
  const json = JSON.stringify(state);
  const size = Buffer.byteLength(json);
  if (size > STATE_MAX_BYTES) throw badRequest(`the state is ${size} bytes; the most kept is ${STATE_MAX_BYTES} (name fewer \`origins\`)`);
  const counts = { cookies: state.cookies.length, origins: state.origins.length, size };
  if (!name) return { session_json: json, ...counts };
  const row = await writeSealed("browser_states", ownerKey(owner), name, Buffer.from(json), STATES_PER_OWNER);
  return { name, ...counts, created_at_ms: row.created_at_ms, updated_at_ms: row.updated_at_ms };
}

/** The state a load body names: a saved name of `owner`, or the `session_json` given. */
export async function stateToLoad(owner: string | null | undefined, body: z.output<typeof LoadSchema>): Promise<State> {
  let text: string;
  if (body.name !== undefined) {
    const name = checkName("name", body.name);
    const saved = await readSealed("browser_states", ownerKey(owner), name);
    if (!saved) throw notFound(`no saved state named "${name}"`);
    text = saved.toString("utf8");
  } else {
    text = body.session_json!;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the fault: cookie values, perhaps.
    throw badRequest("session_json: not valid JSON (save a state without a name to get one)");
  }
  try {
    return validate(StateSchema, raw, "session_json");
  } catch (e) {
    throw isApiError(e) ? badRequest(`session_json: ${e.message}`) : e;
  }
}

export interface LoadAnswer {
  cookies: number;
  origins: number;
  /** What could not be put in: sessionStorage of an origin no tab has open, a blocked database. */
  skipped: { origin: string; what: "session_storage" | "indexed_db"; why: string }[];
}

/** Loads a state into the screen's browser, adding to what it has. */
export async function loadState(t: ScreenTarget, context: BrowserContext, state: State): Promise<LoadAnswer> {
  const hide = valuesOf(state);
  const cookies = state.cookies.map(({ partitionKey: _p, ...c }) => c);
  if (cookies.length) await scrubbed("the browser refused the state's cookies", "bad_request", hide, () => context.addCookies(cookies));
  const answer: LoadAnswer = { cookies: cookies.length, origins: 0, skipped: [] };
  const open = context.pages();
  let scratch: Page | undefined;
  /** The agent's front tab (the one a person sees), fronted again when the scratch tab closes. */
  let front: Page | null | undefined;
  try {
    for (const o of state.origins) {
      const tabs = open.filter((p) => originOf(p.url()) === o.origin);
      if (o.localStorage.length || o.indexedDB?.length) {
        // A tab already at the origin takes it; else a blank page of the origin in a scratch tab
        // (every request answered here, so nothing of the site runs or is fetched).
        let page = tabs[0];
        if (!page) {
          front ??= await pageOf(t).then((f) => f.page, () => null);
          scratch ??= await scrubbed("opening a scratch tab", "failed", [], () => scratchPage(context));
          await scrubbed(`opening ${o.origin}`, "failed", [], () => scratch!.goto(o.origin));
          page = scratch;
        }
        const target = page;
        await scrubbed(`writing ${o.origin}'s localStorage`, "failed", hide, () => target.evaluate(writeStorage, { kind: "localStorage" as const, items: o.localStorage }));
        if (o.indexedDB?.length) {
          const failed = await scrubbed(`writing ${o.origin}'s IndexedDB`, "failed", hide, () => target.evaluate(writeIndexedDb, o.indexedDB as IdbDatabase[]));
          for (const db of failed) answer.skipped.push({ origin: o.origin, what: "indexed_db", why: `database "${db}" could not be opened (a tab holds an older version open)` });
        }
      }
      // sessionStorage lives in one tab: it goes into the tabs open at its origin, or nowhere.
      if (o.sessionStorage?.length) {
        if (!tabs.length) answer.skipped.push({ origin: o.origin, what: "session_storage", why: "no tab is open at this origin" });
        for (const tab of tabs) {
          await scrubbed(`writing ${o.origin}'s sessionStorage`, "failed", hide, () => tab.evaluate(writeStorage, { kind: "sessionStorage" as const, items: o.sessionStorage! }));
        }
      }
      answer.origins++;
    }
  } finally {
    if (scratch) {
      await scratch.close().catch(() => undefined);
      // Chromium fronts a closed tab's opener; should it front another, the one shown before goes back.
      await front?.bringToFront().catch(() => undefined);
    }
  }
  return answer;
}

async function scratchPage(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  await page.route("**/*", (route) => route.fulfill({ status: 200, contentType: "text/html", body: "<!doctype html><title>holm</title>" }));
  return page;
}

export async function listStates(owner: string | null | undefined) {
  return (await listSealed("browser_states", ownerKey(owner))).map(({ name, size, created_at_ms, updated_at_ms }) => ({ name, size, created_at_ms, updated_at_ms }));
}

export async function deleteState(owner: string | null | undefined, name: string): Promise<{ name: string; deleted: true }> {
  checkName("name", name);
  if (!(await deleteSealed("browser_states", ownerKey(owner), name))) throw notFound(`no saved state named "${name}"`);
  return { name, deleted: true };
}
