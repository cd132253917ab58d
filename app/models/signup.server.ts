// Sign-up: a new account and the workspace it starts in (its own, or the one it was invited to),
// written together or not at all. Written one after the other, a refusal of the second part (an
// invitation for another email, a bad workspace name) left an account behind that could log in.
import { ApiError } from "~/utils/api-error.server";
import { db, lockKey } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import { isLoopback, isLoopbackUrl } from "~/utils/loopback";
import { safeEqual } from "~/utils/secret.server";
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
  /** Whether the caller may make the first account, which administers the server (`mayAdminister`). */
  mayAdminister: boolean;
}

/**
 * Who may make a fresh server's first account, which administers it: the operator, that is a
 * loopback peer (behind a proxy, the client the loopback proxy names: server.ts) or whoever gives
 * the server token. A server listening on a public address used to hand itself to the first
 * stranger who found its sign-up page.
 *
 * With HOLM_PUBLIC_URL on another host, a loopback peer counts only when it asked for a loopback
 * name (`Host: 127.0.0.1:…`, `localhost`, an SSH tunnel): a proxy that passes the public Host on
 * but no X-Forwarded-For makes every stranger's request come from its loopback address. And only
 * when its request carries none of the headers a proxy adds: the Host is the client's to choose,
 * and nginx passes it on to its only server on the port (the recipe without its X-Forwarded-For
 * line gave a stranger who sent `Host: 127.0.0.1:8080` the server: tests/integration/reverse-proxy).
 */
export function mayAdminister(address: string | undefined, headers: Headers, token: string): boolean {
  if (isLoopback(address) && (!publicElsewhere() || (hostIsLoopback(headers.get("host")) && !PROXIED.some((h) => headers.has(h))))) return true;
  const serverToken = env().HOLM_SERVER_TOKEN;
  return !!serverToken && token !== "" && safeEqual(token, serverToken);
}

/** Headers a reverse proxy adds (docs/reverse-proxy.md's recipes set the first three). */
const PROXIED = ["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "forwarded", "x-real-ip", "via"];

const publicElsewhere = () => {
  const pub = env().HOLM_PUBLIC_URL;
  return !!pub && !isLoopbackUrl(pub);
};

function hostIsLoopback(host: string | null): boolean {
  if (!host) return false;
  try {
    return isLoopbackUrl(`http://${host}`);
  } catch {
    return false;
  }
}

/** Whether a caller who is not at the machine can make the first account at all (with the server token). */
export const firstAccountByToken = (): boolean => !!env().HOLM_SERVER_TOKEN;

export const FIRST_ACCOUNT_REFUSAL =
  "the first account administers this server, so it is made from the machine itself (its loopback address, or through an SSH tunnel) or with the server token (HOLM_SERVER_TOKEN)";

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
      if (Number(n) === 0 && !input.mayAdminister) throw new ApiError("denied", FIRST_ACCOUNT_REFUSAL);
      const user = { ...row, is_admin: Number(n) === 0 ? 1 : 0 };
      await tx.insertInto("user").values(user).execute();
      const workspaceId = inv ? await joinByInvitation(tx, inv, user.id) : (await insertWorkspace(tx, user.id, wsName)).id;
      return { user: toUser(user), workspaceId };
    });
}
