import { type Actor, type WorkspaceActor } from "~/models/actor";
import { checkKey } from "~/models/key.server";
import type { Role } from "~/models/roles";
import { SESSION_COOKIE, readCookie, validateSession } from "~/models/session.server";
import { userCount } from "~/models/user.server";
import { workspacesOf } from "~/models/workspace.server";
import { ApiError } from "~/utils/api-error.server";
import { env } from "~/utils/env.server";
import { noteActor } from "~/utils/log.server";
import { safeEqual } from "~/utils/secret.server";
import { CSRF_HEADER, csrfMatches } from "./csrf.server";
import { isLoopback, isLoopbackUrl, peerOf } from "./peer.server";

function bearer(request: Request): string | undefined {
  const header = request.headers.get("authorization");
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

const unauthorized = (message: string) => new ApiError("unauthorized", message);
const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

/** The role a request needs by default: reading is for viewers, changing for members. */
function defaultRole(request: Request): Role {
  return request.method === "GET" || request.method === "HEAD" ? "viewer" : "member";
}

const SEND_KEY = "send Authorization: Bearer <a holm_sk_ key from the console's Keys page, or HOLM_SERVER_TOKEN>";

/**
 * An Authorization header that is not `Bearer <one token>`: a key pasted without the word
 * (`authorization: holm_sk_…`), another scheme (`Token …`, curl's `-u key:` Basic), or an empty
 * Bearer. Said as such, never with the value (it is likely a secret).
 */
function notBearer(header: string): ApiError {
  const scheme = /^\s*(\S+)/.exec(header)?.[1] ?? "";
  const why = scheme.startsWith("holm_sk_")
    ? "the Authorization header holds a key without the word Bearer"
    : /^basic$/i.test(scheme)
      ? "this server takes no Basic authentication (curl -u)"
      : /^bearer$/i.test(scheme)
        ? "the Authorization header's Bearer has no single token after it"
        : "the Authorization header is not of the Bearer scheme";
  return unauthorized(`${why}; send it as Authorization: Bearer holm_sk_… (a key from the console's Keys page, or HOLM_SERVER_TOKEN)`);
}

let accountsSeen = false;

/** Whether anyone has signed up; once true it stays true (open mode never comes back). */
async function accountsExist(): Promise<boolean> {
  accountsSeen ||= (await userCount()) > 0;
  return accountsSeen;
}

/**
 * The person behind a console session cookie on /v1, in the session's current workspace with
 * their role there. A change (any method but GET and HEAD) needs the session's CSRF token in the
 * x-holm-csrf header: the cookie alone rides along on requests other pages make.
 */
async function sessionActor(request: Request): Promise<WorkspaceActor | undefined> {
  const token = readCookie(request.headers.get("cookie"), SESSION_COOKIE);
  const found = token ? await validateSession(token) : undefined;
  if (!found) return undefined;
  if (request.method !== "GET" && request.method !== "HEAD" && !csrfMatches(request.headers.get(CSRF_HEADER), found.session.id)) {
    throw new ApiError(
      "forbidden",
      `a change through /v1 with a console session needs the ${CSRF_HEADER} header (the page's csrf token); from a script, ${SEND_KEY}`,
    );
  }
  const workspaces = await workspacesOf(found.user.id);
  const workspace = workspaces.find((w) => w.id === found.session.workspace_id) ?? workspaces[0];
  if (!workspace) throw new ApiError("forbidden", "you belong to no workspace yet; make one in the console");
  noteActor(request, `person:${found.user.name}`);
  // With its user: what it does is recorded as this person's (the trace's `by`). With its session:
  // a CDP token or viewer ticket minted here dies with it (log-out, a password change), as the
  // console's do.
  return { kind: "workspace", workspaceId: workspace.id, role: workspace.role, via: "session", userId: found.user.id, sessionId: found.session.id };
}

/**
 * Resolves the caller of a /v1 route (docs/decisions/0005):
 *   - `Authorization: Bearer holm_sk_…`: the key's workspace, role member;
 *   - `Authorization: Bearer <HOLM_SERVER_TOKEN>`: the server, for everything;
 *   - no Authorization, a console session cookie: that person, in their current workspace with
 *     their role (CSRF-checked);
 *   - nothing, on a server with no token (open mode): the server, but only for a loopback peer
 *     and only until the first account exists.
 * Anything else is 401 `unauthorized`.
 */
export async function requireActor(request: Request, need: Role = defaultRole(request)): Promise<Actor> {
  const token = env().HOLM_SERVER_TOKEN;
  const given = bearer(request);
  let actor: WorkspaceActor | undefined;
  if (given?.startsWith("holm_sk_")) {
    const check = await checkKey(given);
    if (!check.ok) {
      throw unauthorized(check.why === "unknown" ? "the API key is not valid" : `the API key is ${check.why}`);
    }
    actor = { kind: "workspace", workspaceId: check.key.workspace_id, role: "member", via: "key", keyId: check.key.id };
    // The request's log line names the key, never its secret.
    noteActor(request, `key:${check.key.name}`);
  } else if (given !== undefined || request.headers.has("authorization")) {
    if (given === undefined) throw notBearer(request.headers.get("authorization") ?? "");
    if (!token) {
      // A token that this server does not have is a mistake worth reporting.
      throw unauthorized("this server has no token; send a holm_sk_ key or no Authorization header");
    }
    if (!safeEqual(given, token)) throw unauthorized(`the bearer token is not valid; ${SEND_KEY}`);
    noteActor(request, "server");
    return { kind: "server", via: "token" };
  } else {
    actor = await sessionActor(request);
    if (!actor) {
      if (token) throw unauthorized(`this server needs credentials: ${SEND_KEY}`);
      // A public URL on another host means people come through a proxy: such a caller is never
      // the operator at the machine, whatever address the proxy connects from (ADR 0005).
      const pub = env().HOLM_PUBLIC_URL;
      if (pub && !isLoopbackUrl(pub)) {
        throw unauthorized(`with HOLM_PUBLIC_URL on ${new URL(pub).hostname} and no HOLM_SERVER_TOKEN, /v1 answers no caller without credentials; ${SEND_KEY}`);
      }
      if (!isLoopback(peerOf(request))) {
        throw unauthorized(`with no HOLM_SERVER_TOKEN, /v1 answers without credentials only to loopback peers; ${SEND_KEY}`);
      }
      if (await accountsExist()) {
        throw unauthorized(`this server has accounts, so open mode is over (it ends at the first sign-up); ${SEND_KEY}`);
      }
      noteActor(request, "open");
      return { kind: "server", via: "open" };
    }
  }
  if (RANK[actor.role] < RANK[need]) {
    throw new ApiError("denied", `this needs the ${need} role; the caller is a ${actor.role}`);
  }
  return actor;
}

/** For scheduled-work routes: the server token, or CRON_SECRET. */
export async function requireScheduler(request: Request): Promise<Actor> {
  const cron = env().CRON_SECRET;
  const given = bearer(request);
  if (cron && given && safeEqual(given, cron)) {
    noteActor(request, "cron");
    return { kind: "server", via: "token" };
  }
  const actor = await requireActor(request, "viewer");
  if (actor.kind !== "server") throw new ApiError("denied", "scheduled work needs the server token or CRON_SECRET");
  return actor;
}
