import { redirect } from "react-router";
import type { Actor } from "~/models/actor";
import { workspaceOfBox } from "~/models/box-record.server";
import type { Role } from "~/models/roles";
import {
  SESSION_COOKIE,
  type Session,
  clearedSessionCookie,
  readCookie,
  sessionCookie,
  setSessionWorkspace,
  validateSession,
} from "~/models/session.server";
import { type User, userCount } from "~/models/user.server";
import { type Workspace, workspacesOf } from "~/models/workspace.server";
import { ApiError } from "~/utils/api-error.server";
import { env } from "~/utils/env.server";
import { csrfFor, csrfMatches } from "./csrf.server";

export { csrfFor };

// The console's side of authentication: the session cookie, the current workspace, CSRF.

export interface ConsoleContext {
  user: User;
  session: Session;
  workspaces: Workspace[];
  workspace: Workspace | undefined;
  csrf: string;
}

/**
 * Whether the session cookie gets `Secure`: the request came over https, or people reach the
 * server through HOLM_PUBLIC_URL over https (TLS ended by a proxy in front).
 */
export function isSecure(request: Request): boolean {
  return new URL(request.url).protocol === "https:" || env().HOLM_PUBLIC_URL?.startsWith("https:") === true;
}

export async function getConsole(request: Request): Promise<ConsoleContext | undefined> {
  const token = readCookie(request.headers.get("cookie"), SESSION_COOKIE);
  if (!token) return undefined;
  const found = await validateSession(token);
  if (!found) return undefined;
  const workspaces = await workspacesOf(found.user.id);
  const workspace = workspaces.find((w) => w.id === found.session.workspace_id) ?? workspaces[0];
  return { ...found, workspaces, workspace, csrf: csrfFor(found.session.id) };
}

/** A signed-in person, or a redirect to log-in (or to sign-up on a server with no account). */
export async function requireConsole(request: Request): Promise<ConsoleContext> {
  const ctx = await getConsole(request);
  if (ctx) return ctx;
  if ((await userCount()) === 0) throw redirect("/signup");
  const url = new URL(request.url);
  // A form sent from a page drawn while signed in (signed out in another tab since, or the session
  // ended): it was not done, and the log-in page says so (`ended=action`).
  const action = request.method !== "GET" && request.method !== "HEAD";
  throw redirect(`/login?next=${encodeURIComponent(url.pathname + url.search)}${action ? "&ended=action" : ""}`);
}

/** A signed-in person in a workspace with at least `need`: `pick` if given, else the session's current. */
export async function requireWorkspace(
  request: Request,
  need: Role = "viewer",
  pick?: string,
): Promise<ConsoleContext & { workspace: Workspace; actor: Actor }> {
  return inWorkspace(await requireConsole(request), need, pick);
}

function inWorkspace(ctx: ConsoleContext, need: Role, pick: string | undefined): ConsoleContext & { workspace: Workspace; actor: Actor } {
  const workspace = pick ? ctx.workspaces.find((w) => w.id === pick) : ctx.workspace;
  if (!workspace) {
    if (pick) throw new ApiError("denied", "you are not a member of the workspace this page is for; reload the page");
    throw redirect("/workspaces/new");
  }
  const rank = { viewer: 0, member: 1, admin: 2, owner: 3 };
  if (rank[workspace.role] < rank[need]) {
    throw new ApiError("denied", `this needs the ${need} role in ${workspace.name}; you are a ${workspace.role}`);
  }
  const actor: Actor = {
    kind: "workspace",
    workspaceId: workspace.id,
    role: workspace.role,
    via: "session",
    userId: ctx.user.id,
    sessionId: ctx.session.id,
  };
  return { ...ctx, workspace, actor };
}

/**
 * For a console form's action: the CSRF token first, then the workspace the form's page was drawn
 * for (`page_workspace`, put there by CsrfInput) with at least `need` there. The session's
 * current workspace is shared by every tab and another tab may have switched it since the page
 * was drawn; the form acts where the page showed, because that is what the person saw and chose,
 * and their role there is checked as for any action (refusing with "reload" would send them to a
 * workspace they did not pick). That workspace becomes the session's current one again, so the
 * page drawn after the action is the one they acted on (as picking it in the switcher would).
 * A form without the field (a page drawn before it existed) acts in the current workspace.
 */
export async function requireFormWorkspace(request: Request, form: FormData, need: Role = "viewer") {
  const signedIn = await requireConsole(request);
  requireCsrf(form, signedIn);
  const pick = form.get("page_workspace");
  const ctx = inWorkspace(signedIn, need, typeof pick === "string" && pick ? pick : undefined);
  if (ctx.workspace.id !== ctx.session.workspace_id) {
    await setSessionWorkspace(ctx.session.id, ctx.workspace.id);
    ctx.session = { ...ctx.session, workspace_id: ctx.workspace.id };
  }
  return ctx;
}

/**
 * requireWorkspace for a page or call about one box (its page, screen, trace, ticket, thumbnail):
 * in the box's workspace when the person belongs to it, whichever workspace the session has
 * current, so a link to a box of another of your workspaces opens (and its buttons act) without
 * switching every other tab's workspace. Someone outside the box's workspace gets their current
 * one, where the box is not found, as before.
 */
export async function requireBoxWorkspace(request: Request, boxId: string, need: Role = "viewer") {
  const ctx = await requireConsole(request);
  const owner = await workspaceOfBox(boxId);
  const mine = owner !== null && ctx.workspaces.some((w) => w.id === owner);
  return inWorkspace(ctx, need, mine ? owner : undefined);
}

/**
 * requireWorkspace for the console's JSON endpoints (tickets, thumbnails, trace data): signed
 * out is a JSON 401, not a redirect to the log-in page that a fetch() would follow. For one box
 * (`boxId`, its workspace), or in `workspace` (the page's, if the person is a member), or else
 * the current one.
 */
export async function requireWorkspaceJson(request: Request, need: Role = "viewer", about?: string | { workspace?: string }) {
  try {
    if (typeof about === "string") return await requireBoxWorkspace(request, about, need);
    return await requireWorkspace(request, need, about?.workspace || undefined);
  } catch (e) {
    if (e instanceof Response) throw new ApiError("unauthorized", "sign in to the console first");
    throw e;
  }
}

/** Every console form carries the session's CSRF token; a missing or wrong one is refused. */
export function requireCsrf(form: FormData, ctx: ConsoleContext) {
  const given = form.get("csrf");
  if (typeof given !== "string" || !csrfMatches(given, ctx.session.id)) {
    throw new ApiError("denied", "this form is stale or did not come from the console; reload the page");
  }
}

export function startSessionHeaders(request: Request, token: string, expiresAtMs: number): Headers {
  return new Headers({ "set-cookie": sessionCookie(token, expiresAtMs, isSecure(request)) });
}

export function endSessionHeaders(request: Request): Headers {
  return new Headers({ "set-cookie": clearedSessionCookie(isSecure(request)) });
}
