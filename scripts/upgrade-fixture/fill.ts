// Fills a `local` store through the models of an older holm (the commit scripts/make-upgrade-
// fixture.mjs checked out), so the rows are what that release wrote, in its formats: hashed
// passwords and keys, sealed secrets, trace entries and frames. Runs with that commit's app/ and
// db/ (cwd: its tree); HOLM_STATE_DIR and HOLM_SECRET_KEY come from the caller. Rows whose model
// needs an engine (a box, a launch's image) are written as that release's model would (its own
// normalizeSpec/normalizePlacement and noteLaunchImage). Prints what the test needs as JSON.
// Written against the models of ed7db85; a later release may need its calls adjusted.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { openDb, db, closeDb } from "~/utils/db.server";
import { createUser, setSetting } from "~/models/user.server";
import { acceptInvitation, createWorkspace, invite } from "~/models/workspace.server";
import { createKey } from "~/models/key.server";
import { createSession } from "~/models/session.server";
import { putSecret } from "~/models/secret-store.server";
import { ownerKey, writeSealed } from "~/models/sealed-store.server";
import { createRuntime } from "~/models/runtime-store.server";
import { createWebhook } from "~/models/webhook.server";
import { recordEvent } from "~/models/event.server";
import { recordEntries, recordFrameIfChanged } from "~/models/trace.server";
import { noteLaunchImage } from "~/models/image.server";
import { fanOut } from "~/models/webhook-delivery.server";
import { imageRequest, normalizePlacement, normalizeSpec, specDigest } from "~/models/spec.server";

const T0 = 1_790_000_000_000;
// A 1×1 PNG and a 2×1 one: two different frames.
const PNG_A = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");
const PNG_B = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAYAAAD0In+KAAAAEUlEQVR42mNk+M9Qz8DAwMAAAw8BgTcN7ZQAAAAASUVORK5CYII=", "base64");

await openDb();
const ada = await createUser({ email: "ada@example.com", name: "Ada", password: "correct horse battery", isAdmin: true });
const bob = await createUser({ email: "bob@example.com", name: "Bob", password: "battery staple horse", isAdmin: false });
const ws = await createWorkspace(ada.id, "Fixture");
const bobInvite = await invite(ws.id, "owner", ada.id, "bob@example.com", "member");
await acceptInvitation(bobInvite.token, bob.id, "bob@example.com");
await invite(ws.id, "owner", ada.id, "carol@example.com", "viewer");
await setSetting("signups_open", "true");
const key = await createKey({ workspaceId: ws.id, name: "agent", createdBy: ada.id });
const session = await createSession(ada.id, ws.id);
await putSecret(ws.id, "pw", "fixture-secret-value");
const state = { cookies: [{ name: "sid", value: "abc", domain: "example.com", path: "/", expires: -1, httpOnly: true, secure: false, sameSite: "Lax" }], origins: [] };
await writeSealed("browser_states", ownerKey(ws.id), "login", Buffer.from(JSON.stringify(state)), 100);
// A throwaway self-signed certificate and key: the provider checks that they parse.
const pem = execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "3650", "-subj", "/CN=fixture", "-keyout", "-", "-out", "-"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
const cert = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/.exec(pem)![0];
const tlsKey = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----\n/.exec(pem)![0];
await createRuntime({ name: "remote", provider: "docker", fields: { host: "tcp://10.0.0.9:2376" }, secrets: { ca: cert, cert, key: tlsKey } });
const hook = await createWebhook(ws.id, ada.id, { url: "http://127.0.0.1:9/hook", events: ["box.created", "box.removed"], secret: "fixture-webhook-secret-0123" });

const asKey = { kind: "workspace" as const, workspaceId: ws.id, role: "member" as const, via: "key" as const, keyId: key.key.id };
const asAda = { kind: "workspace" as const, workspaceId: ws.id, role: "owner" as const, via: "session" as const, userId: ada.id, sessionId: session.session.id };
// Boxes: one stopped, one removed, as that release's launch would have recorded them.
const spec = normalizeSpec({ desktop: { width: 1024, height: 768, features: [] } });
const placement = normalizePlacement({}, "docker");
const digest = specDigest(spec);
const boxes = ["box_" + "a".repeat(32), "box_" + "b".repeat(32)];
for (const [i, id] of boxes.entries()) {
  await db()
    .insertInto("box")
    .values({
      id, owner: ws.id, runtime: "docker", runtime_ref: `holm-${id}`, spec_digest: digest, spec_json: JSON.stringify(spec),
      placement_json: JSON.stringify(placement), image: "holm-x11:0123456789abcdef", state: i === 0 ? "stopped" : "gone",
      reason: i === 0 ? null : "removed by its owner", screens: 1, width: 1024, height: 768, persistent: 0,
      created_at_ms: T0 + i, expires_at_ms: T0 + 3_600_000, idle_timeout_secs: null, last_used_ms: T0 + 10,
      removed_at_ms: i === 0 ? null : T0 + 20, desktop: 1, name: `fixture-${i}`, labels_json: JSON.stringify({ team: "web" }),
      created_by: key.key.id, created_by_name: "agent", start_json: null, pooled: 0,
    })
    .execute();
  await recordEvent("box.created", { owner: ws.id, box_id: id, runtime: "docker", by: asKey });
}
await recordEvent("box.removed", { owner: ws.id, box_id: boxes[1], runtime: "docker", by: asAda });
// The webhook's deliveries of those events, as the server's fan-out loop makes them.
await fanOut();
await noteLaunchImage("docker", "holm-x11:0123456789abcdef", imageRequest(spec), digest);
await db().insertInto("image_build").values({ owner: ws.id, image: "holm-x11:0123456789abcdef", at_ms: T0 }).execute();

const box = boxes[0]!;
await recordEntries(box, [
  { actor: "server", event: "box_created", data: { spec }, at_ms: T0 },
  { actor: "agent", event: "acted", screen: 0, data: { step: { type: "click", at: { x: 10, y: 20 } }, ok: true }, at_ms: T0 + 1 },
  { actor: "agent", event: "acted", screen: 0, data: { step: { type: "type", text: "hello" }, ok: true }, frame: { png: PNG_A }, at_ms: T0 + 2 },
]);
await recordFrameIfChanged(box, 0, "agent", { png: PNG_B });
await closeDb();

const frames = Object.fromEntries([PNG_A, PNG_B].map((b) => [createHash("sha256").update(b).digest("hex"), b.toString("base64")]));
const dir = process.env.HOLM_STATE_DIR!;
for (const hash of Object.keys(frames)) if (!fs.existsSync(path.join(dir, "frames", hash.slice(0, 2), `${hash}.png`))) throw new Error(`frame ${hash} was not written`);
process.stdout.write(JSON.stringify({
  ada: { id: ada.id, email: "ada@example.com", password: "correct horse battery" },
  bob: { id: bob.id, email: "bob@example.com", password: "battery staple horse" },
  workspace: ws.id, key: { id: key.key.id, secret: key.secret }, session: session.token,
  secret: { name: "pw", value: "fixture-secret-value" }, state: { name: "login", cookies: state.cookies.length },
  runtime: "remote", webhook: { id: hook.id, secret: "fixture-webhook-secret-0123" }, boxes, frames,
}) + "\n");
