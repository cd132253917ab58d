import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, json, startServer } from "../support/server";
import { openStore } from "../support/store";

// Webhook deliveries with HOLM_SERVER_SCHEDULE=external (docs/decisions/0018): a server that
// cannot keep a loop alive sends nothing by itself; /v1/jobs/run fans the new events out and
// sends what is due, and says how many it attempted in `Holm-Webhook-Deliveries` (the body stays
// the seed's `{ran}`). A real server process and a real receiver on 127.0.0.1; the events are
// rows written into the server's store, as another process would record them (no box needed).

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const got: { body: string; signature: string }[] = [];
const answers: number[] = [];
const receiver = http.createServer((req, res) => {
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    got.push({ body, signature: String(req.headers["holm-signature"]) });
    res.statusCode = answers.shift() ?? 200;
    res.end("ok");
  });
});

let server: TestServer;
const cron = randomBytes(24).toString("hex");
const byCron = (p: string, method = "POST") => fetch(`${server.base}${p}`, { method, headers: { authorization: `Bearer ${cron}` } });

/** An event with no owner: the server token's, so its webhooks get it. */
function insertEvent(kind: string) {
  const db = openStore(server);
  db.pragma("busy_timeout = 5000");
  db.prepare("insert into event (at_ms, kind, box_id, data_json) values (?, ?, ?, ?)").run(Date.now(), kind, `box_${randomBytes(16).toString("hex")}`, JSON.stringify({ by: "server", by_name: "holm" }));
  db.close();
}

function verify(secret: string, r: { body: string; signature: string }): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(r.signature);
  if (!m) return false;
  const want = createHmac("sha256", secret).update(`${m[1]}.${r.body}`).digest();
  return timingSafeEqual(Buffer.from(m[2]!, "hex"), want);
}

beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  server = await startServer({
    HOLM_STORAGE_BACKEND: "local",
    HOLM_SERVER_SCHEDULE: "external",
    HOLM_SERVER_JOBS: "queue",
    CRON_SECRET: cron,
    HOLM_WEBHOOK_ALLOW_PRIVATE: "1",
    HOLM_WEBHOOK_RETRY_BASE_MS: "300",
  });
});

afterAll(async () => {
  await server?.stop();
  await new Promise((r) => receiver.close(r));
});

describe("webhook deliveries with HOLM_SERVER_SCHEDULE=external", () => {
  it("a delivery is sent only when /v1/jobs/run is called, which says how many it attempted; a failed one is retried by a later call", async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const made = await json(await server.api("/v1/webhooks", { method: "POST", json: { url, events: ["box.paused", "box.stopped"] } }));
    expect(made.secret).toMatch(/^whsec_/);

    insertEvent("box.paused");
    insertEvent("box.stopped");
    insertEvent("box.ready"); // not subscribed
    // Nothing sends by itself: the loop of an internal schedule would have within a second or two.
    await sleep(3000);
    expect(got).toHaveLength(0);
    expect(await json(await server.api(`/v1/webhooks/${made.id}/deliveries`))).toEqual({ deliveries: [] });

    const run = await byCron("/v1/jobs/run");
    expect(run.status).toBe(200);
    expect(run.headers.get("holm-webhook-deliveries")).toBe("2");
    expect(await json(run)).toEqual({ ran: 0 });
    expect(got.map((g) => JSON.parse(g.body).kind).sort()).toEqual(["box.paused", "box.stopped"]);
    for (const g of got) expect(verify(made.secret, g)).toBe(true);
    const log = (await json(await server.api(`/v1/webhooks/${made.id}/deliveries`))).deliveries;
    expect(log.map((d: any) => d.status)).toEqual(["delivered", "delivered"]);

    // Nothing due: nothing attempted, GET as well as POST.
    const idle = await byCron("/v1/jobs/run", "GET");
    expect(idle.headers.get("holm-webhook-deliveries")).toBe("0");
    expect(await json(idle)).toEqual({ ran: 0 });

    // A receiver answering 500: attempted once by this call, pending, and sent again by a later one.
    answers.push(500);
    insertEvent("box.paused");
    const failing = await byCron("/v1/jobs/run");
    expect(failing.headers.get("holm-webhook-deliveries")).toBe("1");
    expect(got).toHaveLength(3);
    const pending = (await json(await server.api(`/v1/webhooks/${made.id}/deliveries`))).deliveries[0];
    expect(pending).toMatchObject({ status: "pending", attempts: 1, last_status: 500 });
    await sleep(3000);
    expect(got).toHaveLength(3);
    // The retry is due after 150–450 ms (base 300 ms × jitter); poll the route until it sends it.
    const deadline = Date.now() + 30_000;
    while (got.length < 4 && Date.now() < deadline) {
      await byCron("/v1/jobs/run");
      await sleep(200);
    }
    expect(got).toHaveLength(4);
    expect(verify(made.secret, got[3]!)).toBe(true);
    const again = (await json(await server.api(`/v1/webhooks/${made.id}/deliveries`))).deliveries[0];
    expect(again).toMatchObject({ status: "delivered", attempts: 2 });
  });
});
