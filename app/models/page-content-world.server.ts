import { randomBytes } from "node:crypto";
import type { CDPSession, Page } from "playwright-core";
import { ApiError } from "~/utils/api-error.server";

// Our own DevTools session on a tab, and an isolated world in its page: the reader and the
// screenshot's labels run there, beside the page's own JavaScript but out of its reach. The page
// cannot see the libraries we load, nor break them by replacing built-ins (Array.prototype.map,
// Node.prototype.cloneNode), and nothing we define leaks into the page's globals. The session
// and the world are kept per page (a world per document: a navigation makes a new one).

const sessions = new WeakMap<Page, Promise<CDPSession>>();

/** The tab's DevTools session of ours, opened on first use and kept while it works. */
export function cdpOf(page: Page): Promise<CDPSession> {
  let s = sessions.get(page);
  if (!s) {
    s = page.context().newCDPSession(page);
    sessions.set(page, s);
    s.catch(() => sessions.get(page) === s && sessions.delete(page));
  }
  return s;
}

/** Sends on the tab's session; a session that has gone (the tab crashed) is opened again once. */
export async function cdpSend<T>(page: Page, method: string, params?: Record<string, unknown>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const p = cdpOf(page);
    try {
      return (await (await p).send(method as never, params as never)) as T;
    } catch (e) {
      const gone = /session closed|target closed|has been closed|detached/i.test((e as Error).message);
      if (!gone || attempt > 0 || page.isClosed()) throw e;
      if (sessions.get(page) === p) sessions.delete(page);
    }
  }
}

interface World {
  contextId: number;
  /** A value only this world's global holds: an id that now names another context fails it. */
  token: string;
  /** Scripts already run in it (by name), so each is sent once per document. */
  loaded: Set<string>;
}

const worlds = new WeakMap<Page, World>();

async function newWorld(page: Page): Promise<World> {
  const tree = await cdpSend<{ frameTree: { frame: { id: string } } }>(page, "Page.getFrameTree");
  const made = await cdpSend<{ executionContextId: number }>(page, "Page.createIsolatedWorld", {
    frameId: tree.frameTree.frame.id,
    worldName: "holm",
  });
  const world: World = { contextId: made.executionContextId, token: randomBytes(12).toString("hex"), loaded: new Set() };
  await evaluateIn(page, world, `globalThis.__holmWorld = ${JSON.stringify(world.token)}`);
  worlds.set(page, world);
  return world;
}

interface EvalAnswer {
  result: { value?: unknown; type: string };
  exceptionDetails?: { text: string; exception?: { description?: string } };
}

async function evaluateIn(page: Page, world: World, expression: string, awaitPromise = false): Promise<unknown> {
  const r = await cdpSend<EvalAnswer>(page, "Runtime.evaluate", { expression, contextId: world.contextId, returnByValue: true, awaitPromise });
  if (r.exceptionDetails) {
    const d = r.exceptionDetails;
    throw new WorldError(d.exception?.description?.split("\n")[0] ?? d.text);
  }
  return r.result.value;
}

class WorldError extends Error {}

const STALE = "__holm_stale__";

/**
 * Runs `expression` in the page's isolated world (made on first use and after each navigation),
 * with the named scripts (expressions too, that set what they define on `globalThis`) run there
 * first, once per document. The expression's value comes back as JSON.
 */
export async function inWorld<T>(page: Page, expression: string, scripts: Record<string, string> = {}, awaitPromise = false): Promise<T> {
  // A page whose own script never yields (or an open dialog, until it is dismissed) holds every
  // call into it: the caller gets an answer all the same.
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ApiError("timeout", `the page did not answer within ${WORLD_MS / 1000} s: its own script is busy`)), WORLD_MS);
  });
  return Promise.race([runInWorld<T>(page, expression, scripts, awaitPromise), expired]).finally(() => clearTimeout(timer));
}

/** How long a read in the page's world may take before the caller is answered `timeout`. */
export const WORLD_MS = 30_000;

async function runInWorld<T>(page: Page, expression: string, scripts: Record<string, string>, awaitPromise: boolean): Promise<T> {
  for (let attempt = 0; attempt < 3; attempt++) {
    let world = worlds.get(page);
    try {
      world ??= await newWorld(page);
      for (const [name, source] of Object.entries(scripts)) {
        if (world.loaded.has(name)) continue;
        await evaluateIn(page, world, guarded(world, source));
        world.loaded.add(name);
      }
      const value = await evaluateIn(page, world, guarded(world, expression), awaitPromise);
      if (value === STALE) throw new WorldError(STALE);
      return value as T;
    } catch (e) {
      if (e instanceof ApiError) throw e;
      if (page.isClosed()) throw new ApiError("not_found", "the tab closed");
      const msg = (e as Error).message.split("\n")[0] ?? "";
      // The document went away (a navigation): its world went with it; make one in the new one.
      const stale = e instanceof WorldError ? msg === STALE : /Cannot find context|context was destroyed|Execution context/i.test(msg);
      if (!stale) throw new ApiError("failed", e instanceof WorldError ? `in the page: ${msg}` : `the page could not be reached: ${msg}`);
      if (worlds.get(page) === world) worlds.delete(page);
    }
  }
  throw new ApiError("failed", "the page kept navigating while it was read", { retryable: true });
}

/** The expression, run only in the world it was meant for (a context id can be reused). */
function guarded(world: World, expression: string): string {
  return `(globalThis.__holmWorld === ${JSON.stringify(world.token)} ? (() => { return (${expression}); })() : ${JSON.stringify(STALE)})`;
}
