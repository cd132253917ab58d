import { sha256 } from "@oslojs/crypto/sha2";
import { encodeBase32LowerCaseNoPadding, encodeHexLowerCase } from "@oslojs/encoding";
import { randomBytes } from "node:crypto";
import { nameProblem } from "~/protocol/plain-text";
import { ApiError, badRequest, notFound } from "~/utils/api-error.server";
import type { Transaction } from "kysely";
import type { Database } from "../../db/schema";
import { db } from "~/utils/db.server";
import { principalChanged } from "./principal-changes.server";
import { normalizeEmail } from "./user.server";

import { type Role, atLeast } from "./roles";

export { ROLES, type Role, atLeast } from "./roles";

export interface Workspace {
  id: string;
  name: string;
  role: Role;
}

export interface Member {
  user_id: string;
  email: string;
  name: string;
  role: Role;
  created_at_ms: number;
  /** When they last used the console (at most a minute off); null: not since this was recorded. */
  last_seen_ms: number | null;
}

const INVITE_DAYS = 7;
const INVITE_MS = INVITE_DAYS * 24 * 3600 * 1000;

/** A workspace's name as it is kept; refused when it is empty or longer than 80 characters. */
export function workspaceName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed || trimmed.length > 80) throw badRequest("a workspace name is 1 to 80 characters", "name");
  const problem = nameProblem(trimmed, "a workspace name");
  if (problem) throw badRequest(problem, "name");
  return trimmed;
}

/** Inside the caller's transaction: a workspace with `userId` as its owner. */
export async function insertWorkspace(tx: Transaction<Database>, userId: string, name: string): Promise<Workspace> {
  const trimmed = workspaceName(name);
  const id = `ws_${randomBytes(10).toString("hex")}`;
  const now = Date.now();
  await tx.insertInto("workspace").values({ id, name: trimmed, created_at_ms: now }).execute();
  await tx.insertInto("membership").values({ workspace_id: id, user_id: userId, role: "owner", created_at_ms: now }).execute();
  return { id, name: trimmed, role: "owner" };
}

export async function createWorkspace(userId: string, name: string): Promise<Workspace> {
  workspaceName(name);
  return db().transaction().execute((tx) => insertWorkspace(tx, userId, name));
}

export async function workspacesOf(userId: string): Promise<Workspace[]> {
  const rows = await db()
    .selectFrom("membership")
    .innerJoin("workspace", "workspace.id", "membership.workspace_id")
    .select(["workspace.id", "workspace.name", "membership.role"])
    .where("membership.user_id", "=", userId)
    .orderBy("workspace.created_at_ms")
    .execute();
  return rows.map((r) => ({ id: r.id, name: r.name, role: r.role as Role }));
}

export async function roleIn(workspaceId: string, userId: string): Promise<Role | undefined> {
  const row = await db()
    .selectFrom("membership")
    .select("role")
    .where("workspace_id", "=", workspaceId)
    .where("user_id", "=", userId)
    .executeTakeFirst();
  return row?.role as Role | undefined;
}

export async function membersOf(workspaceId: string): Promise<Member[]> {
  const rows = await db()
    .selectFrom("membership")
    .innerJoin("user", "user.id", "membership.user_id")
    .select(["user.id as user_id", "user.email", "user.name", "membership.role", "membership.created_at_ms", "user.last_seen_ms"])
    .where("membership.workspace_id", "=", workspaceId)
    .orderBy("membership.created_at_ms")
    .execute();
  return rows.map((r) => ({
    ...r,
    role: r.role as Role,
    created_at_ms: Number(r.created_at_ms),
    last_seen_ms: r.last_seen_ms === null ? null : Number(r.last_seen_ms),
  }));
}

async function ownerCount(workspaceId: string): Promise<number> {
  const row = await db()
    .selectFrom("membership")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("workspace_id", "=", workspaceId)
    .where("role", "=", "owner")
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Owners and admins manage members; only an owner makes or unmakes an owner; one owner stays. */
function mayManage(actorRole: Role, targetRole: Role, newRole?: Role) {
  if (!atLeast(actorRole, "admin")) throw new ApiError("denied", "only owners and admins manage members");
  if ((targetRole === "owner" || newRole === "owner") && actorRole !== "owner") {
    throw new ApiError("denied", "only an owner changes who owns a workspace");
  }
}

export async function changeRole(workspaceId: string, actorRole: Role, userId: string, role: Role): Promise<void> {
  const current = await roleIn(workspaceId, userId);
  if (!current) throw notFound("no such member");
  mayManage(actorRole, current, role);
  if (current === "owner" && role !== "owner" && (await ownerCount(workspaceId)) <= 1) {
    throw new ApiError("denied", "a workspace keeps at least one owner");
  }
  await db().updateTable("membership").set({ role }).where("workspace_id", "=", workspaceId).where("user_id", "=", userId).execute();
  principalChanged({ kind: "member", workspaceId, userId });
}

export async function removeMember(workspaceId: string, actorRole: Role, userId: string): Promise<void> {
  const current = await roleIn(workspaceId, userId);
  if (!current) throw notFound("no such member");
  mayManage(actorRole, current);
  if (current === "owner" && (await ownerCount(workspaceId)) <= 1) {
    throw new ApiError("denied", "a workspace keeps at least one owner");
  }
  await db().deleteFrom("membership").where("workspace_id", "=", workspaceId).where("user_id", "=", userId).execute();
  principalChanged({ kind: "member", workspaceId, userId });
}

const hashToken = (token: string) => encodeHexLowerCase(sha256(new TextEncoder().encode(token)));

const newInviteToken = () => encodeBase32LowerCaseNoPadding(randomBytes(20));

/**
 * Makes an invitation; the token is returned once (it goes into the link) and stored hashed, so
 * the link cannot be shown again later: renewInvitation makes a new one instead.
 */
export async function invite(workspaceId: string, actorRole: Role, actorId: string, email: string, role: Role) {
  mayManage(actorRole, role, role);
  // Joining would change nothing for a member (and the link would promise a role it does not
  // give): their role is changed on the Members page instead.
  const member = await db()
    .selectFrom("membership")
    .innerJoin("user", "user.id", "membership.user_id")
    .innerJoin("workspace", "workspace.id", "membership.workspace_id")
    .select(["membership.role", "workspace.name"])
    .where("membership.workspace_id", "=", workspaceId)
    .where("user.email", "=", normalizeEmail(email))
    .executeTakeFirst();
  if (member) {
    throw new ApiError("denied", `${normalizeEmail(email)} is already a member of ${member.name} (${member.role}); change their role instead`, { at: "email" });
  }
  const token = newInviteToken();
  const now = Date.now();
  await db()
    .insertInto("invitation")
    .values({
      id: hashToken(token),
      workspace_id: workspaceId,
      email: normalizeEmail(email),
      role,
      created_by: actorId,
      created_at_ms: now,
      expires_at_ms: now + INVITE_MS,
      accepted_at_ms: null,
    })
    .execute();
  return { token, expires_at_ms: now + INVITE_MS };
}

/** A pending invitation of this workspace, by id, for someone who may manage its role. */
async function pendingInvitation(workspaceId: string, actorRole: Role, id: string) {
  const row = await db()
    .selectFrom("invitation")
    .select(["id", "email", "role"])
    .where("id", "=", id)
    .where("workspace_id", "=", workspaceId)
    .where("accepted_at_ms", "is", null)
    .where("expires_at_ms", ">", Date.now())
    .executeTakeFirst();
  if (!row) throw notFound("no such pending invitation; it may have been used, revoked or have expired");
  mayManage(actorRole, row.role as Role);
  return { ...row, role: row.role as Role };
}

/**
 * A new link for a pending invitation (the old one stops working), valid for another
 * INVITE_DAYS: the way to send a link again, since only its hash is kept.
 */
export async function renewInvitation(workspaceId: string, actorRole: Role, id: string) {
  const inv = await pendingInvitation(workspaceId, actorRole, id);
  const token = newInviteToken();
  const expires_at_ms = Date.now() + INVITE_MS;
  await db().updateTable("invitation").set({ id: hashToken(token), expires_at_ms }).where("id", "=", inv.id).execute();
  return { token, email: inv.email, role: inv.role, expires_at_ms };
}

/** Revokes a pending invitation: its link stops working at once. */
export async function revokeInvitation(workspaceId: string, actorRole: Role, id: string) {
  const inv = await pendingInvitation(workspaceId, actorRole, id);
  await db().deleteFrom("invitation").where("id", "=", inv.id).execute();
  return { email: inv.email };
}

export async function findInvitation(token: string) {
  if (!/^[a-z2-7]{32}$/.test(token)) return undefined;
  const row = await db()
    .selectFrom("invitation")
    .innerJoin("workspace", "workspace.id", "invitation.workspace_id")
    .select(["invitation.id", "invitation.email", "invitation.role", "invitation.expires_at_ms", "invitation.accepted_at_ms", "workspace.id as workspace_id", "workspace.name as workspace_name"])
    .where("invitation.id", "=", hashToken(token))
    .executeTakeFirst();
  if (!row || row.accepted_at_ms !== null || Number(row.expires_at_ms) < Date.now()) return undefined;
  return { ...row, role: row.role as Role };
}

type Invitation = NonNullable<Awaited<ReturnType<typeof findInvitation>>>;

/** The invitation behind `token`, if it is still good and for `email`; refused otherwise. */
export async function invitationFor(token: string, email: string): Promise<Invitation> {
  const inv = await findInvitation(token);
  if (!inv) throw new ApiError("gone", "this invitation is used, expired or unknown");
  if (inv.email !== normalizeEmail(email)) throw new ApiError("denied", `this invitation is for ${inv.email}`);
  return inv;
}

/**
 * Inside the caller's transaction: uses the invitation and makes `userId` a member. Refused if it
 * was used or revoked since it was read (one link makes one membership, whoever gets there
 * first), and for someone already a member: the link's role is not theirs to take, and the link
 * stays unused.
 */
export async function joinByInvitation(tx: Transaction<Database>, inv: Invitation, userId: string): Promise<string> {
  const already = await tx
    .selectFrom("membership")
    .select("role")
    .where("workspace_id", "=", inv.workspace_id)
    .where("user_id", "=", userId)
    .executeTakeFirst();
  if (already) throw new ApiError("denied", alreadyMember(inv.workspace_name, already.role as Role));
  const used = await tx
    .updateTable("invitation")
    .set({ accepted_at_ms: Date.now() })
    .where("id", "=", inv.id)
    .where("accepted_at_ms", "is", null)
    .executeTakeFirst();
  if (Number(used.numUpdatedRows) !== 1) throw new ApiError("gone", "this invitation is used, expired or unknown");
  await tx
    .insertInto("membership")
    .values({ workspace_id: inv.workspace_id, user_id: userId, role: inv.role, created_at_ms: Date.now() })
    .onConflict((oc) => oc.columns(["workspace_id", "user_id"]).doNothing())
    .execute();
  return inv.workspace_id;
}

/** What someone already in a workspace is told of an invitation to it. */
export function alreadyMember(workspace: string, role: Role): string {
  return `You are already a member of ${workspace} (${role}). To have another role, ask an owner or admin of ${workspace} to change it.`;
}

/** Joins the invited workspace (refused for someone already a member). */
export async function acceptInvitation(token: string, userId: string, email: string): Promise<string> {
  const inv = await invitationFor(token, email);
  return db().transaction().execute((tx) => joinByInvitation(tx, inv, userId));
}

/** Invitations not yet used, newest first, with who made each (their name; the id if they are gone). */
export async function pendingInvitations(workspaceId: string) {
  const rows = await db()
    .selectFrom("invitation")
    .leftJoin("user", "user.id", "invitation.created_by")
    .select(["invitation.id", "invitation.email", "invitation.role", "invitation.created_at_ms", "invitation.expires_at_ms", "invitation.created_by", "user.name as inviter"])
    .where("invitation.workspace_id", "=", workspaceId)
    .where("invitation.accepted_at_ms", "is", null)
    .where("invitation.expires_at_ms", ">", Date.now())
    .orderBy("invitation.created_at_ms", "desc")
    .execute();
  return rows.map((r) => ({
    id: r.id,
    email: r.email,
    role: r.role as Role,
    created_at_ms: Number(r.created_at_ms),
    expires_at_ms: Number(r.expires_at_ms),
    invited_by: r.inviter ?? r.created_by,
  }));
}
