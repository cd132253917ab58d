// Sign-up: a new account and the workspace it starts in (its own, or the one it was invited to),
// written together or not at all. Written one after the other, a refusal of the second part (an
// invitation for another email, a bad workspace name) left an account behind that could log in.
import { db, lockKey } from "~/utils/db.server";
import { emailTaken, prepareUser, toUser, type User } from "./user.server";
import { insertWorkspace, invitationFor, joinByInvitation, workspaceName } from "./workspace.server";

export interface SignUp {
  email: string;
  name: string;
  password: string;
  /** The invitation link's token: the account joins that workspace instead of making one. */
  invite?: string | null;
  /** The new workspace's name; "<name>'s workspace" when empty. */
  workspace?: string;
}

export async function signUp(input: SignUp): Promise<{ user: User; workspaceId: string }> {
  // Everything that can be refused is checked before anything is written.
  const inv = input.invite ? await invitationFor(input.invite, input.email) : undefined;
  const row = await prepareUser(input);
  const wsName = inv ? "" : workspaceName(input.workspace || `${row.name.slice(0, 68)}'s workspace`);
  return db()
    .transaction()
    .execute(async (tx) => {
      // Sign-ups one at a time (on SQLite they are anyway): of two with one email, the second is
      // told the account exists; of two first ones, one administers the server.
      await lockKey(tx, "signup");
      if (await tx.selectFrom("user").select("id").where("email", "=", row.email).executeTakeFirst()) throw emailTaken();
      // The first account on a fresh server administers it (counted here: one admin, however many sign up at once).
      const { n } = await tx.selectFrom("user").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
      const user = { ...row, is_admin: Number(n) === 0 ? 1 : 0 };
      await tx.insertInto("user").values(user).execute();
      const workspaceId = inv ? await joinByInvitation(tx, inv, user.id) : (await insertWorkspace(tx, user.id, wsName)).id;
      return { user: toUser(user), workspaceId };
    });
}
