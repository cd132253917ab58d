import { db } from "~/utils/db.server";
import { noteDirectTicket } from "./direct-ticket-holders.server";

// A password box's viewer password (policy.auth `password`, ADR 0029) is derived from the box's
// agent secret and an epoch (migration 0024). Whoever asks for a ticket is given the password and
// noted as its holder (in direct_ticket, issuer `password:<issuer>`); when a holder loses access
// the epoch rises and the box is told, so the password they saw opens nothing. A leaf (the store
// only): the ticket answer and the revocation checks both reach it.

const HOLDER = "password:";
/** A password is held until it changes, not until a time. */
const UNTIL_CHANGED = Number.MAX_SAFE_INTEGER;

/** The box's current password epoch (0 until someone given the password lost access). */
export async function passwordEpoch(boxId: string): Promise<number> {
  const row = await db().selectFrom("direct_password").select("epoch").where("box_id", "=", boxId).executeTakeFirst();
  return Number(row?.epoch ?? 0);
}

/** Notes that `issuer` was given the box's current password. */
export function notePasswordHolder(boxId: string, issuer: string): Promise<void> {
  return noteDirectTicket(boxId, HOLDER + issuer, UNTIL_CHANGED);
}

/** Who was given the box's current password. */
export async function passwordHolders(boxId: string): Promise<string[]> {
  const rows = await db().selectFrom("direct_ticket").select("issuer").where("box_id", "=", boxId).where("issuer", "like", `${HOLDER}%`).execute();
  return rows.map((r) => r.issuer.slice(HOLDER.length));
}

/** A new password for the box: the epoch rises and nobody holds the new one yet. Returns the new epoch. */
export async function changePassword(boxId: string): Promise<number> {
  return db()
    .transaction()
    .execute(async (tx) => {
      const row = await tx.selectFrom("direct_password").select("epoch").where("box_id", "=", boxId).executeTakeFirst();
      const epoch = Number(row?.epoch ?? 0) + 1;
      await tx
        .insertInto("direct_password")
        .values({ box_id: boxId, epoch })
        .onConflict((oc) => oc.column("box_id").doUpdateSet({ epoch }))
        .execute();
      await tx.deleteFrom("direct_ticket").where("box_id", "=", boxId).where("issuer", "like", `${HOLDER}%`).execute();
      return epoch;
    });
}
