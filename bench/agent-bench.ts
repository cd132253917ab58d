// Measures the in-box agent on this host: Xvfb 1280×800 + fluxbox + Chromium on a page that
// changes colour on every click, the bundled agent, and a keep-alive HTTP client (as the
// server would be). Prints median and p95 per operation.
//
//   node --import tsx bench/agent-bench.ts            (HOLM_AGENT_NODE=/path/to/node18 to use another Node)
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import { cleanup, freePort, percentile, median, startAgent, startFluxbox, startXvfb, track, until, type Agent } from "../tests/agent/harness";

const D = Number(process.env.BENCH_DISPLAY ?? 160);
const N = Number(process.env.BENCH_N ?? 40);

const PAGE = `<!doctype html><html><body style="margin:0;font:16px sans-serif">
<div id="box" style="position:fixed;left:0;top:0;width:100vw;height:50vh;background:#3a6"></div>
<textarea id="t" style="position:fixed;left:0;top:50vh;width:100vw;height:50vh"></textarea>
<script>
  let n = 0;
  document.getElementById("box").addEventListener("mousedown", () => {
    n++;
    const b = document.getElementById("box");
    b.style.background = "hsl(" + (n * 47) % 360 + ",60%,50%)";
    b.textContent = "clicked " + n + " times — " + "lorem ipsum dolor sit amet ".repeat(8);
  });
</script></body></html>`;

interface Row {
  op: string;
  rtt: number[];
  inBox?: number[];
}

function fmt(xs: number[]): string {
  return `${median(xs).toFixed(1).padStart(7)} ${percentile(xs, 95).toFixed(1).padStart(7)}`;
}

async function main(): Promise<void> {
  await startXvfb(D);
  await startFluxbox(D);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-bench-"));
  fs.writeFileSync(path.join(dir, "page.html"), PAGE);
  const cdpPort = await freePort();
  track(
    spawn(
      "chromium",
      [
        "--no-sandbox", "--test-type", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        `--user-data-dir=${path.join(dir, "profile")}`, `--remote-debugging-port=${cdpPort}`, "--start-maximized",
        `file://${path.join(dir, "page.html")}`,
      ],
      { env: { ...process.env, DISPLAY: `:${D}` }, stdio: "ignore", detached: true },
    ),
  );
  const agent: Agent = await startAgent({ HOLM_DISPLAY_BASE: String(D), HOLM_CDP_PORT_BASE: String(cdpPort) });
  const win = await until(async () => {
    const r = await agent.call("POST", "/screens/0/batch", { actions: [{ type: "await_window", what: { class: "chromium", within_ms: 30_000 } }, { type: "wait_still", settle_ms: 1000 }] });
    return r.body.results?.[1]?.ok ? r.body.results[0].window : null;
  }, "chromium", 60_000, 500);
  const boxAt = { x: win.x + Math.floor(win.width / 2), y: win.y + Math.floor(win.height / 4) };
  const textAt = { x: win.x + Math.floor(win.width / 2), y: win.y + Math.floor((win.height * 3) / 4) };

  const rows: Row[] = [];
  const measure = async (op: string, fn: (i: number) => Promise<{ ms: number; took?: number }>): Promise<void> => {
    const row: Row = { op, rtt: [], inBox: [] };
    for (let i = 0; i < 3; i++) await fn(i); // warm
    for (let i = 0; i < N; i++) {
      const r = await fn(i);
      row.rtt.push(r.ms);
      if (r.took !== undefined) row.inBox?.push(r.took);
    }
    if (!row.inBox?.length) delete row.inBox;
    rows.push(row);
  };

  await measure("GET /health", async () => {
    const t = performance.now();
    const res = await fetch(`${agent.url}/health`);
    await res.arrayBuffer();
    return { ms: performance.now() - t };
  });
  await measure("batch: click", async (i) => {
    const r = await agent.call("POST", "/screens/0/batch", { actions: [{ type: "click", at: { x: boxAt.x + (i % 9), y: boxAt.y } }] });
    return { ms: r.ms, took: r.body.took_ms };
  });
  await measure("batch: click + frame (page repaints)", async (i) => {
    const r = await agent.call("POST", "/screens/0/batch", { actions: [{ type: "click", at: { x: boxAt.x + (i % 9), y: boxAt.y } }, { type: "wait", ms: 0 }], want: ["frame"], settle_ms: 30 });
    if (r.body.frame?.unchanged !== false) throw new Error("frame did not change");
    return { ms: r.ms, took: r.body.took_ms };
  });
  await measure("batch: click + frame, settle_ms 0", async (i) => {
    const r = await agent.call("POST", "/screens/0/batch", { actions: [{ type: "click", at: { x: boxAt.x + (i % 9), y: boxAt.y } }], want: ["frame"] });
    return { ms: r.ms, took: r.body.took_ms };
  });
  await agent.call("POST", "/screens/0/batch", { actions: [{ type: "wait_still", settle_ms: 500 }] });
  let have = (await agent.call("GET", "/screens/0/frame")).body.hash as string;
  let changed = 0;
  await measure("GET frame, have = current (unchanged)", async () => {
    const r = await agent.call("GET", `/screens/0/frame?have=${have}`);
    if (!r.body.unchanged) {
      have = r.body.hash;
      changed++;
    }
    return { ms: r.ms };
  });
  rows[rows.length - 1].op += ` [${changed} changed]`;
  await measure("GET frame, no have (cached PNG)", async () => ({ ms: (await agent.call("GET", "/screens/0/frame")).ms }));
  await measure("GET frame scale=50 (cached after first)", async () => ({ ms: (await agent.call("GET", "/screens/0/frame?scale=50")).ms }));
  await measure("batch: move smooth", async (i) => {
    const r = await agent.call("POST", "/screens/0/batch", { actions: [{ type: "move", to: { x: 100 + (i % 2) * 800, y: 300 }, motion: "smooth" }] });
    return { ms: r.ms, took: r.body.took_ms };
  });
  await measure("batch: press ctrl+a", async () => {
    const r = await agent.call("POST", "/screens/0/batch", { actions: [{ type: "press", chord: "ctrl+a" }] });
    return { ms: r.ms, took: r.body.took_ms };
  });
  await measure("GET windows", async () => ({ ms: (await agent.call("GET", "/screens/0/windows")).ms }));
  await measure("GET cursor", async () => ({ ms: (await agent.call("GET", "/screens/0/cursor")).ms }));

  await agent.call("POST", "/screens/0/batch", { actions: [{ type: "click", at: textAt }] });
  let text = "";
  const unit = "The quick brown fox — 中文 😀 ñ € $(x) 'q' \"d\"\n";
  while (Array.from(text).length < 1000) text += unit;
  text = Array.from(text).slice(0, 1000).join("");
  const typeRow: Row = { op: "batch: type 1,000 chars (mixed, delay 0)", rtt: [], inBox: [] };
  for (let i = 0; i < 8; i++) {
    await agent.call("POST", "/screens/0/batch", { actions: [{ type: "press", chord: "ctrl+a", then: "BackSpace" }] });
    const r = await agent.call("POST", "/screens/0/batch", { actions: [{ type: "type", text }] });
    typeRow.rtt.push(r.ms);
    typeRow.inBox?.push(r.body.took_ms);
  }
  rows.push(typeRow);

  const node = process.env.HOLM_AGENT_NODE || process.execPath;
  console.log(`\nholm agent on ${node}, Xvfb 1280x800x24 + fluxbox + Chromium, N=${N} (type: 8)\n`);
  console.log(`${"operation".padEnd(44)}  ${"HTTP round trip ms".padStart(15)}   ${"in the box (took_ms)".padStart(15)}`);
  console.log(`${"".padEnd(44)}  ${"median".padStart(7)} ${"p95".padStart(7)}   ${"median".padStart(7)} ${"p95".padStart(7)}`);
  for (const r of rows) console.log(`${r.op.padEnd(44)}  ${fmt(r.rtt)}   ${r.inBox ? fmt(r.inBox) : ""}`);
  await cleanup();
}

main().catch(async (err) => {
  console.error(err);
  await cleanup();
  process.exit(1);
});
