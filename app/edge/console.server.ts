import { redirect } from "react-router";
import type { Actor } from "~/models/actor";
import type { Role } from "~/models/roles";
import {
  SESSION_COOKIE,
  type Session,
  clearedSessionCookie,
  readCookie,
  sessionCookie,
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
  throw redirect(`/login?next=${encodeURIComponent(url.pathname + url.search)}`);
}

/** A signed-in person in a workspace with at least `need`. */
export async function requireWorkspace(
  request: Request,
  need: Role = "viewer",
): Promise<ConsoleContext & { workspace: Workspace; actor: Actor }> {
  const ctx = await requireConsole(request);
  if (!ctx.workspace) throw redirect("/workspaces/new");
  const rank = { viewer: 0, member: 1, admin: 2, owner: 3 };
  if (rank[ctx.workspace.role] < rank[need]) {
    throw new ApiError("denied", `this needs the ${need} role in ${ctx.workspace.name}; you are a ${ctx.workspace.role}`);
  }
  const actor: Actor = {
    kind: "workspace",
    workspaceId: ctx.workspace.id,
    role: ctx.workspace.role,
    via: "session",
    userId: ctx.user.id,
    sessionId: ctx.session.id,
  };
  return { ...ctx, workspace: ctx.workspace, actor };
}

/**
 * requireWorkspace for the console's JSON endpoints (tickets, thumbnails, trace data): signed
 * out is a JSON 401, not a redirect to the log-in page that a fetch() would follow.
 */
export async function requireWorkspaceJson(request: Request, need: Role = "viewer") {
  try {
    return await requireWorkspace(request, need);
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
