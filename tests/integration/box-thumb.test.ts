import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodePng } from "../support/png";
import type { Person } from "../support/console";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { type Api, twoWorkspaces } from "../support/workspaces";

// The box list's thumbnails, GET /boxes/:id/thumb, on a real box: a small PNG of screen 0 for
// anyone of the box's workspace (a viewer too), private, with an ETag and 304 for it; another
// workspace gets 404, a signed-out browser 401. However often it is asked, the box is captured at
// most once per few seconds: a screen that changes five times a second shows only a few pictures
// in ten seconds of asking five times a second. A stopped box keeps its last picture.

let server: TestServer;
let asA: Api;
let ada: Person;
let bob: Person;
let vic: Person;
let boxId = "";

const thumb = (p: Person | undefined, headers: Record<string, string> = {}) =>
  fetch(`${server.base}/boxes/${boxId}/thumb`, { headers: { ...(p ? { cookie: p.cookie } : {}), ...headers } });

beforeAll(async () => {
  server = await startServer();
  const w = await twoWorkspaces(server);
  ({ ada, bob, asA } = w);
  vic = await w.c.invite(ada, "vic@example.com", "viewer");
  const res = await asA("/v1/boxes", { method: "POST", json: { spec: { desktop: { width: 1024, height: 640 } } } });
  const box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
  boxId = box.id;
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("GET /boxes/:id/thumb", () => {
  it("is a small private PNG of screen 0 with an ETag, 304 for it, for every role of the workspace and no one else", async () => {
    const res = await thumb(ada);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get("cache-control")).toBe("private, no-cache");
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^"[0-9a-f]{40}"$/);
    const png = decodePng(Buffer.from(await res.arrayBuffer()));
    // 1024 px scaled to about 320 (whole percents: 31 %), the screen's shape kept.
    expect(png.width).toBe(317);
    expect(png.height).toBe(198);

    const again = await thumb(ada, { "if-none-match": etag });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    expect(again.headers.get("etag")).toBe(etag);

    const byViewer = await thumb(vic);
    expect(byViewer.status).toBe(200);
    expect(byViewer.headers.get("etag")).toBe(etag);

    const other = await thumb(bob);
    expect(other.status).toBe(404);
    expect((await json(other)).code).toBe("not_found");
    const signedOut = await thumb(undefined);
    expect(signedOut.status).toBe(401);
    expect((await json(signedOut)).code).toBe("unauthorized");
    const wrongId = await fetch(`${server.base}/boxes/box_0123456789abcdef0123456789abcdef/thumb`, { headers: { cookie: ada.cookie } });
    expect(wrongId.status).toBe(404);
  });

  it("GET /boxes/thumbs answers the ETags of the boxes the person sees, in one request", async () => {
    const current = (await thumb(ada)).headers.get("etag");
    const ask = (p: Person | undefined, ids: string) =>
      fetch(`${server.base}/boxes/thumbs?ids=${ids}`, { headers: p ? { cookie: p.cookie } : {} });
    const other = "box_0123456789abcdef0123456789abcdef";
    const mine = await ask(ada, `${boxId},${other},not-a-box`);
    expect(mine.status).toBe(200);
    expect(mine.headers.get("cache-control")).toBe("no-store");
    expect(await json(mine)).toEqual({ thumbs: { [boxId]: current } });
    expect(await json(await ask(vic, boxId))).toEqual({ thumbs: { [boxId]: current } });
    expect(await json(await ask(bob, boxId))).toEqual({ thumbs: {} });
    expect((await ask(undefined, boxId)).status).toBe(401);
    const tooMany = await ask(ada, Array.from({ length: 101 }, () => boxId).join(","));
    expect(tooMany.status).toBe(400);
    expect((await json(tooMany)).message).toContain("at most 100 ids");
    // The picture by that ETag is cached for good; by any other name it is revalidated.
    const byName = await fetch(`${server.base}/boxes/${boxId}/thumb?v=${encodeURIComponent(current!)}`, { headers: { cookie: ada.cookie } });
    expect(byName.headers.get("cache-control")).toBe("private, max-age=31536000, immutable");
    const stale = await fetch(`${server.base}/boxes/${boxId}/thumb?v=%22old%22`, { headers: { cookie: ada.cookie } });
    expect(stale.headers.get("cache-control")).toBe("private, no-cache");
  });

  it("captures a changing screen at most once per few seconds however often it is asked", async () => {
    // A page whose every frame differs: a clock in big digits, redrawn every 200 ms.
    const ticking = "data:text/html,<body style='font:160px monospace'><script>setInterval(()=>document.body.textContent=Date.now(),200)</script>";
    const batch = await asA(`/v1/boxes/${boxId}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "open_url", url: ticking }, { type: "wait", ms: 1000 }] } });
    expect(batch.status).toBe(200);
    const seen: string[] = [];
    const end = Date.now() + 10_000;
    while (Date.now() < end) {
      const res = await thumb(ada);
      expect(res.status).toBe(200);
      const etag = res.headers.get("etag")!;
      if (seen.at(-1) !== etag) seen.push(etag);
      await new Promise((r) => setTimeout(r, 200));
    }
    // Fifty changes of the screen in those ten seconds; at most one picture per 3 s is taken.
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen.length).toBeLessThanOrEqual(5);
  });

  it("keeps a stopped box's last picture, and answers 410 once the box is removed", async () => {
    const before = await thumb(ada);
    const etag = before.headers.get("etag");
    expect((await asA(`/v1/boxes/${boxId}/stop`, { method: "POST" })).status).toBe(200);
    const stopped = await thumb(ada);
    expect(stopped.status).toBe(200);
    expect(stopped.headers.get("etag")).toBe(etag);
    expect((await asA(`/v1/boxes/${boxId}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } })).status).toBe(200);
    const gone = await thumb(ada);
    expect(gone.status).toBe(410);
  });
});
