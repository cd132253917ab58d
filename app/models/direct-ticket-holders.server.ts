import { db } from "~/utils/db.server";

// Who holds direct viewer tickets for a box (migration 0019, ADR 0029): the server signs them, so
// it can name every issuer a box may still let in. direct-viewer-access.server.ts checks them again
// when a box runs after a pause or stop. A leaf (the store only), so the signer and the checker
// both reach it without a cycle.

/** Notes that `issuer` holds a ticket for the box until `expiresAtMs` (the latest expiry wins). */
export async function noteDirectTicket(boxId: string, issuer: string, expiresAtMs: number): Promise<void> {
  await db().deleteFrom("direct_ticket").where("expires_at_ms", "<=", Date.now()).execute();
  await db()
    .insertInto("direct_ticket")
    .values({ box_id: boxId, issuer, expires_at_ms: expiresAtMs })
    .onConflict((oc) =>
      oc.columns(["box_id", "issuer"]).doUpdateSet({ expires_at_ms: expiresAtMs }).where("direct_ticket.expires_at_ms", "<", expiresAtMs),
    )
    .execute();
}

/** The issuers holding unexpired direct tickets for the box (or tickets that expired within `graceMs`). */
export async function directTicketHolders(boxId: string, graceMs = 0): Promise<string[]> {
  const rows = await db()
    .selectFrom("direct_ticket")
    .select("issuer")
    .where("box_id", "=", boxId)
    .where("expires_at_ms", ">", Date.now() - graceMs)
    // Holders of a password box's password (direct-password.server.ts) hold no ticket.
    .where("issuer", "not like", "password:%")
    .execute();
  return rows.map((r) => r.issuer);
}
