import { execFile } from "node:child_process";
import { promisify } from "node:util";

// Attacker programs for the security tests: what a process in a box (Node 18, no packages), a
// local user of the host, or a web page would run to get a desktop session without being given
// one. Each reports what it got; the tests decide what that means.

/**
 * An RFB client that tries every way in without the password: security type None if offered,
 * else VNC authentication with a wrong answer. Run with `node -e SCRIPT host:port…`; prints one
 * JSON line per address: {addr, types, result} where result is "session" (ServerInit arrived),
 * "refused", "closed", "unreachable" or "timeout".
 */
export const VNC_PROBE = String.raw`
const net = require("net");
function probe(addr) {
  const i = addr.lastIndexOf(":");
  const host = addr.slice(0, i).replace(/^\[|\]$/g, ""), port = Number(addr.slice(i + 1));
  return new Promise((resolve) => {
    const out = { addr, types: [], result: "" };
    let buf = Buffer.alloc(0), step = 0;
    const done = (r) => { if (!out.result) out.result = r; sock.destroy(); resolve(out); };
    const sock = net.connect({ host, port });
    sock.setTimeout(5000, () => done("timeout"));
    sock.on("error", (e) => done(step === 0 ? "unreachable" : "closed"));
    sock.on("close", () => done("closed"));
    sock.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        if (step === 0) {
          if (buf.length < 12) return;
          out.version = buf.subarray(0, 12).toString("latin1").trim();
          buf = buf.subarray(12); sock.write("RFB 003.008\n"); step = 1;
        } else if (step === 1) {
          if (buf.length < 1 || buf.length < 1 + buf[0]) return;
          out.types = [...buf.subarray(1, 1 + buf[0])];
          buf = buf.subarray(1 + buf[0]);
          if (out.types.length === 0) return done("refused");
          if (out.types.includes(1)) { sock.write(Buffer.from([1])); step = 2; }
          else if (out.types.includes(2)) { sock.write(Buffer.from([2])); step = 4; }
          else return done("refused");
        } else if (step === 2 || step === 5) {
          if (buf.length < 4) return;
          const ok = buf.readUInt32BE(0) === 0; buf = buf.subarray(4);
          if (!ok) return done("refused");
          sock.write(Buffer.from([1])); step = 3;
        } else if (step === 3) {
          if (buf.length < 24) return;
          return done("session");
        } else if (step === 4) {
          if (buf.length < 16) return;
          buf = buf.subarray(16); sock.write(Buffer.alloc(16)); step = 5;
        }
      }
    });
  });
}
(async () => {
  for (const a of process.argv.slice(1)) console.log(JSON.stringify(await probe(a)));
})();
`;

export interface VncProbeResult {
  addr: string;
  version?: string;
  types: number[];
  result: "session" | "refused" | "closed" | "unreachable" | "timeout";
}

export function parseProbe(stdout: string): VncProbeResult[] {
  return stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as VncProbeResult);
}

/** The probe from this process's side: a local user of the host, not the server. */
export async function probeVncFromHost(addrs: string[]): Promise<VncProbeResult[]> {
  const { stdout } = await promisify(execFile)(process.execPath, ["-e", VNC_PROBE, ...addrs], { timeout: 30_000 });
  return parseProbe(stdout);
}

/**
 * A web page that tries the same over WebSockets (libvncserver answers WebSocket upgrades on
 * the RFB port), and DevTools: it fetches /json/version and opens a WebSocket to a DevTools
 * URL it was handed. Writes {v: [[result, types]…], c: [result…]} into document.title as `RESULT:json`
 * (use `readAttackTitle`).
 */
export function attackPage(vncUrls: string[], cdpUrls: string[]): string {
  return `<!doctype html><html><head><title>running</title></head><body><script>
function vnc(url) {
  return new Promise((resolve) => {
    const out = { url, types: [], result: "" };
    let buf = new Uint8Array(0), step = 0, ws;
    const done = (r) => { if (!out.result) out.result = r; try { ws.close(); } catch {} resolve(out); };
    try { ws = new WebSocket(url); } catch (e) { return done("unreachable"); }
    ws.binaryType = "arraybuffer";
    setTimeout(() => done("timeout"), 5000);
    ws.onerror = () => done(step === 0 ? "unreachable" : "closed");
    ws.onclose = () => done("closed");
    const send = (a) => ws.send(new Uint8Array(a));
    ws.onmessage = (e) => {
      const d = new Uint8Array(e.data), n = new Uint8Array(buf.length + d.length);
      n.set(buf); n.set(d, buf.length); buf = n;
      for (;;) {
        if (step === 0) {
          if (buf.length < 12) return;
          buf = buf.slice(12); send([...new TextEncoder().encode("RFB 003.008\\n")]); step = 1;
        } else if (step === 1) {
          if (buf.length < 1 || buf.length < 1 + buf[0]) return;
          out.types = [...buf.slice(1, 1 + buf[0])]; buf = buf.slice(1 + buf[0]);
          if (out.types.includes(1)) { send([1]); step = 2; }
          else if (out.types.includes(2)) { send([2]); step = 4; }
          else return done("refused");
        } else if (step === 2 || step === 5) {
          if (buf.length < 4) return;
          const ok = buf[0] === 0 && buf[1] === 0 && buf[2] === 0 && buf[3] === 0; buf = buf.slice(4);
          if (!ok) return done("refused");
          send([1]); step = 3;
        } else if (step === 3) {
          if (buf.length < 24) return;
          return done("session");
        } else if (step === 4) {
          if (buf.length < 16) return;
          buf = buf.slice(16); send(new Array(16).fill(0)); step = 5;
        }
      }
    };
  });
}
function cdp(url) {
  return new Promise((resolve) => {
    const out = { url, result: "" };
    let ws;
    const done = (r) => { if (!out.result) out.result = r; try { ws.close(); } catch {} resolve(out); };
    try { ws = new WebSocket(url); } catch (e) { return done("unreachable"); }
    setTimeout(() => done("timeout"), 5000);
    ws.onopen = () => ws.send(JSON.stringify({ id: 1, method: "Browser.getVersion" }));
    ws.onmessage = (e) => done(String(e.data).includes("product") ? "session" : "other");
    ws.onerror = () => done("refused");
    ws.onclose = () => done("closed");
  });
}
(async () => {
  const vncs = await Promise.all(${JSON.stringify(vncUrls)}.map(vnc));
  const cdps = await Promise.all(${JSON.stringify(cdpUrls)}.map(cdp));
  // Short: a tab's title is cut in the agent's answers.
  document.title = "RESULT:" + JSON.stringify({ v: vncs.map((r) => [r.result, r.types]), c: cdps.map((r) => r.result) });
})();
</script></body></html>`;
}

export function readAttackTitle(title: string): { vnc: { result: string; types: number[] }[]; cdp: string[] } {
  // DevTools' tab list HTML-escapes titles.
  const text = title.slice("RESULT:".length).replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  const got = JSON.parse(text) as { v: [string, number[]][]; c: string[] };
  return { vnc: got.v.map(([result, types]) => ({ result, types })), cdp: got.c };
}
