import http from "node:http";
import { Page } from "../tests/support/cdp";
import { execIn, json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// Batches through /v1 on a real box, each against the same step done by `docker exec xdotool`
// in the same run.

const N = Number(process.env.BENCH_N ?? 40);

/** Its top half takes a new colour on each press (bench wayland clicks it too); typing goes to the bottom half. */
export const PAGE = `<!doctype html><html><body style="margin:0">
<div id="box" style="position:fixed;left:0;top:0;width:100vw;height:50vh;background:#3a6"></div>
<textarea id="t" style="position:fixed;left:0;top:50vh;width:100vw;height:50vh"></textarea>
<script>let n = 0; box.addEventListener("mousedown", () => { n++; box.style.background = "hsl(" + (n * 47) % 360 + ",60%,50%)"; });</script>
</body></html>`;

export async function benchDrive() {
  // HOLM_STORAGE_BACKEND=postgres (or local) compares the stores; a database is made for it.
  const server = await startServer(process.env.HOLM_STORAGE_BACKEND ? { HOLM_STORAGE_BACKEND: process.env.HOLM_STORAGE_BACKEND } : {});
  try {
    const box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
    const page = await Page.open(server, box.id);
    await page.navigate(`data:text/html;base64,${Buffer.from(PAGE).toString("base64")}`);
    const click = { type: "click", at: { x: 640, y: 200 } };
    const batch = (body: unknown) =>
      server.api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: body }).then(json);
    const time = async (fn: () => Promise<unknown>, n = N) => {
      const out: number[] = [];
      for (let i = 0; i < 3; i++) await fn();
      for (let i = 0; i < n; i++) {
        const t0 = now();
        await fn();
        out.push(now() - t0);
      }
      return out;
    };

    // The same batch from a lighter client, taking turns with fetch: node:http with a kept-alive
    // socket instead of undici's web streams. The part outside the server is mostly the client's.
    const keptAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const body = JSON.stringify({ actions: [click] });
    const url = new URL(`${server.base}/v1/boxes/${box.id}/screens/0/actions`);
    const post = () =>
      new Promise<void>((resolve, reject) => {
        const req = http.request(url, {
          method: "POST",
          agent: keptAlive,
          headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        }, (res) => {
          res.on("data", () => undefined);
          res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
        });
        req.on("error", reject);
        req.end(body);
      });
    const light: number[] = [];
    // The one-click batch, split by its Server-Timing: `box` (the signed call to the in-box
    // agent, and its work), the server's own share (`app`, the server's whole time on the
    // request, less `box`) and what lies outside the server (the client and loopback).
    const timed = async (body: unknown) => {
      const t0 = now();
      const res = await server.api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: body });
      await res.arrayBuffer();
      const total = now() - t0;
      const timing = res.headers.get("server-timing") ?? "";
      const dur = (name: string) => Number(new RegExp(`${name};dur=([0-9.]+)`).exec(timing)?.[1] ?? NaN);
      const app = dur("app");
      return { total, inBox: dur("box"), app: Number.isNaN(app) ? total : app, trace: dur("trace") };
    };
    const whole: number[] = [];
    const boxShare: number[] = [];
    const own: number[] = [];
    const outside: number[] = [];
    for (let i = 0; i < N + 3; i++) {
      const { total, inBox, app } = await timed({ actions: [click] });
      if (i < 3) continue;
      whole.push(total);
      boxShare.push(inBox);
      own.push(app - inBox);
      outside.push(total - app);
      const t1 = now();
      await post();
      light.push(now() - t1);
    }
    const clickApi = summarize("click batch, no frame (/v1)", whole);
    console.log(`  target median ≤ 8 ms (${clickApi.median <= 8 ? "met" : "missed"})`);
    const b = summarize("  of which Server-Timing box", boxShare);
    console.log(`  target median ≤ 5 ms (${b.median <= 5 ? "met" : "missed"})`);
    summarize("  of which outside the server (client, loopback)", outside);
    const o = summarize("  of which the server's own share (app − box)", own);
    console.log(`  target median ≤ 1 ms (${o.median <= 1 ? "met" : "missed"})`);
    const l = summarize("click batch, no frame (/v1), node:http client", light);
    console.log(`  target median ≤ 8 ms (${l.median <= 8 ? "met" : "missed"}); fetch's median ${(clickApi.median - l.median).toFixed(2)} ms more`);
    keptAlive.destroy();

    // What recording the trace costs a batch, from the Server-Timing the server sends.
    const shares: number[] = [];
    for (let i = 0; i < N; i++) {
      const { total, trace } = await timed({ actions: [click, { type: "move", to: { x: 700, y: 300 } }, click] });
      shares.push((trace / total) * 100);
    }
    summarize("trace recording share of a 3-step batch", shares, "%");
    console.log("  target ≤ 10 %");
    const clickExec = summarize("docker exec xdotool mousemove+click", await time(() => execIn(box.id, ["env", "DISPLAY=:99", "xdotool", "mousemove", "640", "200", "click", "1"]).then(() => {}), 15));
    console.log(`  ratio ${(clickExec.median / clickApi.median).toFixed(1)}× faster than docker exec`);

    // Click + frame, split the same way: where the 1280×800 frame's time goes.
    const fWhole: number[] = [];
    const fBox: number[] = [];
    const fOwn: number[] = [];
    const fTrace: number[] = [];
    for (let i = 0; i < N + 3; i++) {
      const { total, inBox, app, trace } = await timed({ actions: [click], want: ["frame"] });
      if (i < 3) continue;
      fWhole.push(total);
      fBox.push(inBox);
      fOwn.push(app - inBox);
      fTrace.push(trace);
    }
    const frameApi = summarize("click + frame 1280×800 (/v1)", fWhole);
    summarize("  of which Server-Timing box", fBox);
    summarize("  of which the server's own share (app − box)", fOwn);
    summarize("    of which trace", fTrace);
    const frameExec = summarize("docker exec import -window root png:-", await time(() => execIn(box.id, ["env", "DISPLAY=:99", "import", "-window", "root", "png:-"]).then(() => {}), 15));
    console.log(`  ratio ${(frameExec.median / frameApi.median).toFixed(1)}×; target median ≤ 25 ms (${frameApi.median <= 25 ? "met" : "missed"})`);

    const still = await json(await server.api(`/v1/boxes/${box.id}/screens/0/frame`));
    const unchanged = summarize("GET frame with unchanged have (/v1)", await time(async () => {
      const f = await json(await server.api(`/v1/boxes/${box.id}/screens/0/frame?have=${still.hash}`));
      if (!f.unchanged) throw new Error("screen changed during the bench");
    }));
    console.log(`  target median ≤ 5 ms (${unchanged.median <= 5 ? "met" : "missed"})`);

    const text = "the quick brown fox jumps over the lazy dog 0123456789 ".repeat(20).slice(0, 1000);
    await batch({ actions: [{ type: "click", at: { x: 640, y: 600 } }] });
    // Each sample starts once the page holds the last one's text (not timed): back to back, a
    // batch's select-all waited behind Chromium still handling the last 2,000 key events, and the
    // figure was Chromium's pace, not the batch's. Both are reported: when the batch answers (X
    // has taken every key), and when the page holds every character.
    const value = () => page.evaluate<string>("document.querySelector('#t').value");
    const settled = async (want: string) => {
      for (const until = now() + 10_000; (await value()) !== want && now() < until; ) await new Promise((r) => setTimeout(r, 5));
    };
    const answered: number[] = [];
    const arrived: number[] = [];
    for (let i = 0; i < 11; i++) {
      await settled(i === 0 ? (await value()) : text);
      const t0 = now();
      await batch({ actions: [{ type: "press", chord: "ctrl+a", then: ["BackSpace"] }, { type: "type", text, delay_ms: 0 }] });
      const t1 = now();
      await settled(text);
      if (i < 3) continue;
      answered.push(t1 - t0);
      arrived.push(now() - t0);
    }
    const typeApi = summarize("type 1,000 characters, delay 0: batch answers (/v1)", answered);
    const got = await value();
    console.log(`  every character arrived: ${got === text}; target median ≤ 300 ms (${typeApi.median <= 300 ? "met" : "missed"})`);
    summarize("type 1,000 characters: until the page holds them all", arrived);
    console.log("  (Chromium's own pace for 2,000 key events into a textarea; the batch does not wait for it)");
    const typeExec = summarize("docker exec xdotool type --delay 0 (1,000)", await time(
      () => execIn(box.id, ["env", "DISPLAY=:99", "xdotool", "type", "--delay", "0", "--", text]).then(() => {}), 4));
    console.log(`  ratio ${(typeExec.median / typeApi.median).toFixed(1)}×`);
    page.close();
  } finally {
    await server.stop();
    await removeTestBoxes();
  }
}
