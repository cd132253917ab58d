import { describe, expect, it } from "vitest";
import { ON_POSTGRES } from "../support/postgres";
import { storeModules } from "../support/store-modules";

// Two usable keys of a workspace never share a name (the Keys page's Revoke buttons and "by key …"
// in the trace tell keys apart by it). The check and the insert used to be two statements, so
// creates at once (a script, two tabs, two servers) each passed the check and all were written.

const WITH_POSTGRES = ON_POSTGRES || process.env.HOLM_TEST_POSTGRES === "1";
const stores = storeModules("keynames");

for (const backend of ["local", "postgres"] as const) {
  describe.skipIf(backend === "postgres" && !WITH_POSTGRES)(`key names on ${backend}`, () => {
    it("one key of a name is made however many creates of it run at once", async () => {
      await stores.openStore(backend);
      const { signUp } = await import("~/models/signup.server");
      const { createKey, listKeys } = await import("~/models/key.server");
      const { user, workspaceId } = await signUp({ email: "k@example.com", name: "K", password: "correct horse battery", workspace: "W", mayAdminister: true });
      const tries = await Promise.allSettled(Array.from({ length: 12 }, () => createKey({ workspaceId, name: "agent", createdBy: user.id })));
      expect(tries.filter((t) => t.status === "fulfilled")).toHaveLength(1);
      for (const t of tries) if (t.status === "rejected") expect((t.reason as Error).message).toMatch(/a key named "agent" is already active/);
      expect((await listKeys(workspaceId)).filter((k) => k.name === "agent")).toHaveLength(1);
      // Another name is still free.
      await createKey({ workspaceId, name: "other", createdBy: user.id });
    });
  });
}
