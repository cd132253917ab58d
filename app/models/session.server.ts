import { sha256 } from "@oslojs/crypto/sha2";
import { encodeBase32LowerCaseNoPadding, encodeHexLowerCase } from "@oslojs/encoding";
import { randomBytes } from "node:crypto";
import { db } from "~/utils/db.server";
import { principalChanged } from "./principal-changes.server";
import { type User, getUser, markSeen } from "./user.server";

// Sessions as the Lucia guide builds them: a random token in the cookie, only its SHA-256 in
// the store, a 30-day expiry that slides forward when a session is used in its second half.

const DAY = 24 * 3600 * 1000;
export const SESSION_DAYS = 30;
export const SESSION_COOKIE = "holm_session";

export interface Session {
  id: string;
  user_id: string;
  workspace_id: string | null;
  expires_at_ms: number;
}

export function sessionIdOf(token: string): string {
  return encodeHexLowerCase(sha256(new TextEncoder().encode(token)));
}

export async function createSession(userId: string, workspaceId: string | null): Promise<{ token: string; session: Session }> {
  const token = encodeBase32LowerCaseNoPadding(randomBytes(20));
  const now = Date.now();
  const session: Session = { id: sessionIdOf(token), user_id: userId, workspace_id: workspaceId, expires_at_ms: now + SESSION_DAYS * DAY };
  await db()
    .insertInto("session")
    .values({ ...session, created_at_ms: now })
    .execute();
  return { token, session };
}

/** The session and user for a cookie token, extending the session when it is half used. */
export async function validateSession(token: string): Promise<{ session: Session; user: User } | undefined> {
  if (!/^[a-z2-7]{32}$/.test(token)) return undefined;
  const id = sessionIdOf(token);
  const row = await db().selectFrom("session").selectAll().where("id", "=", id).executeTakeFirst();
  if (!row) return undefined;
  const now = Date.now();
  const session: Session = { id: row.id, user_id: row.user_id, workspace_id: row.workspace_id, expires_at_ms: Number(row.expires_at_ms) };
  if (now >= session.expires_at_ms) {
    await db().deleteFrom("session").where("id", "=", id).execute();
    return undefined;
  }
  if (now >= session.expires_at_ms - (SESSION_DAYS / 2) * DAY) {
    session.expires_at_ms = now + SESSION_DAYS * DAY;
    await db().updateTable("session").set({ expires_at_ms: session.expires_at_ms }).where("id", "=", id).execute();
  }
  const user = await getUser(session.user_id);
  if (!user) return undefined;
  // A session in use is its person seen (console pages, /v1 with the session, sockets).
  markSeen(user.id, now);
  return { session, user };
}

export async function invalidateSession(id: string): Promise<void> {
  await db().deleteFrom("session").where("id", "=", id).execute();
  // Its sockets (viewer, terminal, box list) close too.
  principalChanged({ kind: "sessions", sessionIds: [id] });
}

/** A session as the store has it now, by id (expired ones are none): for checking open sockets. */
export async function liveSession(id: string, now = Date.now()): Promise<Session | undefined> {
  const row = await db().selectFrom("session").selectAll().where("id", "=", id).executeTakeFirst();
  if (!row || now >= Number(row.expires_at_ms)) return undefined;
  return { id: row.id, user_id: row.user_id, workspace_id: row.workspace_id, expires_at_ms: Number(row.expires_at_ms) };
}

/** The live sessions of a person (few): for finding the one a viewer ticket was minted in. */
export async function liveSessionIdsOf(userId: string, now = Date.now()): Promise<string[]> {
  const rows = await db().selectFrom("session").select("id").where("user_id", "=", userId).where("expires_at_ms", ">", now).execute();
  return rows.map((r) => r.id);
}

export async function setSessionWorkspace(id: string, workspaceId: string): Promise<void> {
  await db().updateTable("session").set({ workspace_id: workspaceId }).where("id", "=", id).execute();
}

export function sessionCookie(token: string, expiresAtMs: number, secure: boolean): string {
  const parts = [
    `${SESSION_COOKIE}=${token}`,
    "Path=/",
    "HttpOnly",
    "SameSite=Lax",
    `Expires=${new Date(expiresAtMs).toUTCString()}`,
  ];
  if (secure) parts.push("Secure");
  return parts.join("; ");
}

export function clearedSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure ? "; Secure" : ""}`;
}

/**
 * The cookie `name`, or undefined when it is missing or sent more than once. Cookies do not
 * separate ports, and a cookie set for a longer path is sent first: a page on another port of
 * this host could plant its own session for, say, `/settings`, and the person would act there in
 * the planter's workspace. With two, neither is trusted (that page then asks them to log in).
 */
export function readCookie(header: string | null | undefined, name: string): string | undefined {
  if (!header) return undefined;
  let found: string | undefined;
  for (const part of header.split(";")) {
    const i = part.indexOf("=");
    if (i > 0 && part.slice(0, i).trim() === name) {
      if (found !== undefined) return undefined;
      found = part.slice(i + 1).trim();
    }
  }
  return found;
}
