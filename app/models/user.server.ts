import { randomBytes } from "node:crypto";
import type { Insertable } from "kysely";
import type { UserTable } from "../../db/schema";
import { nameProblem } from "~/protocol/plain-text";
import { ApiError, badRequest } from "~/utils/api-error.server";
import { db } from "~/utils/db.server";
import { dummyHash, hashPassword, verifyPassword } from "~/utils/password.server";
import { principalChanged } from "./principal-changes.server";
import { log } from "~/utils/log.server";

/** The longest name a person may give (as a box's, a key's and a workspace's). */
export const PERSON_NAME_MAX = 80;

export interface User {
  id: string;
  email: string;
  name: string;
  is_admin: boolean;
  created_at_ms: number;
}

export const MIN_PASSWORD = 10;

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function toUser(row: { id: string; email: string; name: string; is_admin: number; created_at_ms: number }): User {
  return { id: row.id, email: row.email, name: row.name, is_admin: row.is_admin === 1, created_at_ms: Number(row.created_at_ms) };
}

export async function userCount(): Promise<number> {
  const row = await db().selectFrom("user").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function getUser(id: string): Promise<User | undefined> {
  const row = await db().selectFrom("user").selectAll().where("id", "=", id).executeTakeFirst();
  return row ? toUser(row) : undefined;
}

export async function findUserByEmail(email: string): Promise<User | undefined> {
  const row = await db().selectFrom("user").selectAll().where("email", "=", normalizeEmail(email)).executeTakeFirst();
  return row ? toUser(row) : undefined;
}

export type NewUserRow = Insertable<UserTable>;

/**
 * Checks a new account and hashes its password, writing nothing: sign-up (signup.server.ts)
 * writes the row together with the account's workspace or membership, or not at all.
 */
export async function prepareUser(input: { email: string; name: string; password: string }): Promise<NewUserRow> {
  // Other people read it ("Ada has control", the trace, the members table): as for a box's name,
  // nothing that shows as another name, and not without end (it was unchecked).
  const name = input.name.trim();
  if (name.length > PERSON_NAME_MAX) throw badRequest(`a name has at most ${PERSON_NAME_MAX} characters`, "user_name");
  const problem = nameProblem(name, "a name");
  if (problem) throw badRequest(problem, "user_name");
  if (input.password.length < MIN_PASSWORD) throw badRequest(`a password needs at least ${MIN_PASSWORD} characters`);
  const email = normalizeEmail(input.email);
  if (await findUserByEmail(email)) throw emailTaken();
  return {
    id: `usr_${randomBytes(12).toString("hex")}`,
    email,
    name: name || email.split("@")[0]!,
    password_hash: await hashPassword(input.password),
    is_admin: 0,
    created_at_ms: Date.now(),
  };
}

export const emailTaken = () => new ApiError("denied", "an account with this email exists; log in instead");

export async function createUser(input: { email: string; name: string; password: string; isAdmin: boolean }): Promise<User> {
  const row = { ...(await prepareUser(input)), is_admin: input.isAdmin ? 1 : 0 };
  await db().insertInto("user").values(row).execute();
  return toUser(row);
}

/** The user for these credentials, or undefined. Takes the same time whether or not the email exists. */
export async function checkCredentials(email: string, password: string): Promise<User | undefined> {
  const row = await db().selectFrom("user").selectAll().where("email", "=", normalizeEmail(email)).executeTakeFirst();
  if (!row) {
    await verifyPassword(password, await dummyHash());
    return undefined;
  }
  return (await verifyPassword(password, row.password_hash)) ? toUser(row) : undefined;
}

/** Changes the password and ends every session of the user (the caller starts a fresh one). */
export async function changePassword(userId: string, current: string, next: string): Promise<void> {
  const row = await db().selectFrom("user").selectAll().where("id", "=", userId).executeTakeFirstOrThrow();
  if (!(await verifyPassword(current, row.password_hash))) throw badRequest("the current password is not right", "current");
  if (next.length < MIN_PASSWORD) throw badRequest(`a password needs at least ${MIN_PASSWORD} characters`);
  await db().updateTable("user").set({ password_hash: await hashPassword(next) }).where("id", "=", userId).execute();
  await db().deleteFrom("session").where("user_id", "=", userId).execute();
  principalChanged({ kind: "sessions", userId });
}

const SEEN_EVERY_MS = 60_000;
const seenAt = new Map<string, number>();

/**
 * Notes that a person used the console now (the members page's "last seen"): written at most
 * once a minute per person, in the background, so a page load pays a map lookup.
 */
export function markSeen(userId: string, now = Date.now()): void {
  if (now - (seenAt.get(userId) ?? 0) < SEEN_EVERY_MS) return;
  seenAt.set(userId, now);
  if (seenAt.size > 10_000) seenAt.delete(seenAt.keys().next().value!);
  void db()
    .updateTable("user")
    .set({ last_seen_ms: now })
    .where("id", "=", userId)
    .execute()
    .catch((err) => log.error({ err }, "last-seen update failed"));
}

export async function getSetting(key: string): Promise<string | undefined> {
  return (await db().selectFrom("setting").select("value").where("key", "=", key).executeTakeFirst())?.value;
}

export async function setSetting(key: string, value: string): Promise<void> {
  await db()
    .insertInto("setting")
    .values({ key, value })
    .onConflict((oc) => oc.column("key").doUpdateSet({ value }))
    .execute();
}

export async function signupsOpen(): Promise<boolean> {
  return (await getSetting("signups_open")) === "true";
}
