import { spawn } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { VNC_PROBE, attackPage, parseProbe, probeVncFromHost, readAttackTitle } from "../support/attacks";
import { RfbClient } from "../../bench/rfb-client";
import { agentFetchAs, agentSecretOf, vncPasswordOf, vncResponder } from "../support/box-auth";
import { boxIp } from "../support/cdp";
import { ROOT, type TestServer, docker, execIn, json, removeTestBoxes, startServer } from "../support/server";

// Issue 10, inside a box: nothing there offers a channel that drives the desktop without a
// credential only the server has. Each test is the attack, performed against a real box through
// the built server, from where an attacker would stand: a process in the box (docker exec and
// the /exec route), a web page in the box's Chromium, a local user of the host (this process),
// and someone who reads the traffic on the box's bridge.

let server: TestServer;
let box: any;
let ip: string;

const api = (p: string, init?: RequestInit & { json?: unknown }) => server.api(p, init);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  server = await startServer();
  const res = await api("/v1/boxes", { method: "POST", json: {} });
  box = await json(res);
  expect(box.state, JSON.stringify(box)).toBe("ready");
  ip = await boxIp(box.id);
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

/** No address gave a session, none offered security type None, and the box's own addresses asked for a password. */
function expectNoVncSession(results: { types: number[]; result: string }[], mustAsk: number) {
  expect(results.length).toBeGreaterThan(0);
  for (const r of results) {
    expect(r.result, JSON.stringify(r)).not.toBe("session");
    expect(r.types, JSON.stringify(r)).not.toContain(1);
  }
  // The addresses x11vnc listens on must have answered (else the test proves nothing): with VNC authentication only.
  const asked = results.filter((r) => r.types.length > 0);
  expect(asked.length, JSON.stringify(results)).toBeGreaterThanOrEqual(mustAsk);
  for (const r of asked) expect(r.types, JSON.stringify(r)).toEqual([2]);
}

describe("VNC in a box needs the password only the server has", () => {
  it("a process in the box (docker exec) gets no session on 127.0.0.1, the bridge address or ::1", async () => {
    const out = await execIn(box.id, ["node", "-e", VNC_PROBE, "127.0.0.1:5900", `${ip}:5900`, "[::1]:5900"]);
    const results = parseProbe(out.out);
    expect(results, out.out).toHaveLength(3);
    expectNoVncSession(results, 2);
  });

  it("a command the agent runs (POST /exec) gets no session either", async () => {
    const res = await api(`/v1/boxes/${box.id}/exec`, {
      method: "POST",
      json: { argv: ["node", "-e", VNC_PROBE, "127.0.0.1:5900", `${ip}:5900`] },
    });
    const out = await json(res);
    expect(res.status, JSON.stringify(out)).toBe(200);
    expectNoVncSession(parseProbe(out.stdout), 2);
  });

  it("a local user of the host (not the server) gets no session on the box's address", async () => {
    expectNoVncSession(await probeVncFromHost([`${ip}:5900`]), 1);
  });

  it("with the box's password (derived from the server key) the session opens: the password is the only lock", async () => {
    const c = await RfbClient.overTcp(ip, 5900);
    const init = await c.handshake(1, vncResponder(server, box.id));
    expect(init.width).toBe(1280);
    c.close();
    // The password of another box does not open this one.
    const wrong = await RfbClient.overTcp(ip, 5900);
    await expect(wrong.handshake(1, vncResponder(server, "box_someotherbox"))).rejects.toThrow(/security result|closed/);
    wrong.close();
  });

  it("a web page in the box's Chromium gets no VNC session over WebSockets, and no DevTools session", async () => {
    // The page is even handed the browser's DevTools URL (which it could not read itself).
    const version = await execIn(box.id, ["sh", "-c", `node -e 'fetch("http://127.0.0.1:9222/json/version").then((r) => r.json()).then((j) => console.log(j.webSocketDebuggerUrl))' 2>/dev/null`]);
    const browserWs = version.out.trim();
    expect(browserWs).toMatch(/^ws:\/\/127\.0\.0\.1:9222\/devtools\/browser\//);
    const page = attackPage([`ws://127.0.0.1:5900`, `ws://${ip}:5900`], [browserWs, browserWs.replace(/:\d+\//, ":9322/")]);
    // From a file: a data: page is held back by Chromium's local network access rules, a local page is not.
    const put = await api(`/v1/boxes/${box.id}/files`, {
      method: "PUT",
      json: { path: "/tmp/holm-attack.html", contents_base64: Buffer.from(page).toString("base64") },
    });
    expect(put.status).toBe(200);
    const url = "file:///tmp/holm-attack.html";
    const open = await api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "open_url", url, target: "current" }] } });
    expect(open.status, await open.clone().text()).toBe(200);
    let title = "";
    for (let i = 0; i < 100 && !title.startsWith("RESULT:"); i++) {
      await sleep(200);
      const r = await json(await api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "tabs" }] } }));
      title = String(r.tabs?.find((t: any) => t.active)?.title ?? "");
    }
    expect(title).toMatch(/^RESULT:/);
    const got = readAttackTitle(title);
    expectNoVncSession(got.vnc, 2);
    expect(got.cdp).toHaveLength(2);
    for (const c of got.cdp) expect(c).not.toBe("session");
  });
});

/** Whether anything answers HTTP at this address (any status). */
async function httpAnswers(url: string): Promise<number | "no answer"> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return "no answer";
  }
}

describe("DevTools in a box has no open bridge", () => {
  it("nothing answers DevTools on the box's bridge address: not the old socat bridge, not Chromium itself", async () => {
    expect(await httpAnswers(`http://${ip}:9322/json/version`)).toBe("no answer");
    expect(await httpAnswers(`http://${ip}:9222/json/version`)).toBe("no answer");
    // From inside the box, the bridge address has no DevTools either (Chromium keeps to loopback).
    const inBox = await execIn(box.id, [
      "node",
      "-e",
      `Promise.all([9222, 9322].map((p) => fetch("http://${ip}:" + p + "/json/version").then((r) => r.status, () => "no answer"))).then((s) => console.log(JSON.stringify(s)))`,
    ]);
    expect(JSON.parse(inBox.out.trim().split("\n").pop()!)).toEqual(["no answer", "no answer"]);
  });

  it("the agent's DevTools relay answers the server's signed requests", async () => {
    const res = await agentFetchAs(server, box.id, ip, "/screens/0/cdp/json/version");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ Browser: expect.stringMatching(/Chrome/) });
  });

  it("the agent's DevTools route refuses a request without a valid signature", async () => {
    const variants: Record<string, string>[] = [{}, { authorization: `Bearer ${agentSecretOf(server, box.id)}` }];
    for (const headers of variants) {
      const res = await fetch(`http://${ip}:7070/screens/0/cdp/json/version`, { headers });
      expect(res.status).toBe(401);
    }
  });
});

describe("the server↔agent channel", () => {
  it("the bearer secret alone no longer opens the agent", async () => {
    const res = await fetch(`http://${ip}:7070/screens/0/cursor`, { headers: { authorization: `Bearer ${agentSecretOf(server, box.id)}` } });
    expect(res.status).toBe(401);
  });

  it("a request sniffed off the bridge cannot be replayed", async () => {
    const netInfo = await docker.getNetwork("holm").inspect();
    const iface = netInfo.Options?.["com.docker.network.bridge.name"] ?? `br-${String(netInfo.Id).slice(0, 12)}`;
    const sniffer = spawn("python3", [path.join(ROOT, "tests/support/sniff.py"), iface, ip, "7070", "20"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    sniffer.stdout.on("data", (d) => (out += d));
    sniffer.stderr.on("data", (d) => (err += d));
    const exited = new Promise<number | null>((r) => sniffer.on("exit", r));
    for (let i = 0; i < 50 && !out.includes("ready"); i++) await sleep(50);
    expect(out, err).toContain("ready");
    // The server's own request, read off the wire.
    for (let i = 0; i < 20 && out.split("\n").length < 3; i++) {
      expect((await api(`/v1/boxes/${box.id}/screens/0/cursor`)).status).toBe(200);
      await sleep(100);
    }
    expect(await exited, err).toBe(0);
    const sniffed = Buffer.from(out.split("\n")[1]!.trim(), "hex");
    expect(sniffed.toString("latin1")).toMatch(/^GET \/screens\/0\/cursor HTTP\/1\.1\r\n/);
    // Sent again, byte for byte, and once more with the path changed.
    const replay = (bytes: Buffer) =>
      new Promise<string>((resolve, reject) => {
        const s = net.connect(7070, ip, () => s.write(bytes));
        let got = "";
        s.on("data", (d) => {
          got += d.toString("latin1");
          if (got.includes("\r\n")) {
            s.destroy();
            resolve(got.split("\r\n")[0]!);
          }
        });
        s.on("error", reject);
        s.setTimeout(5000, () => reject(new Error("no answer")));
      });
    expect(await replay(sniffed)).toMatch(/^HTTP\/1\.1 401/);
    const moved = Buffer.from(sniffed.toString("latin1").replace("GET /screens/0/cursor", "GET /screens/0/windows"), "latin1");
    expect(await replay(moved)).toMatch(/^HTTP\/1\.1 401/);
  });

  it("an answer larger than the cap is a clear 502, not an unbounded buffer in the server", async () => {
    // 16 MiB of NUL on each stream is within the agent's output limit; as JSON (\u0000 each) it
    // is ~192 MiB, past the server's 128 MiB cap for bulk answers.
    const res = await api(`/v1/boxes/${box.id}/exec`, {
      method: "POST",
      json: { argv: ["sh", "-c", "head -c 16777216 /dev/zero; head -c 16777216 /dev/zero >&2"], timeout_ms: 60_000 },
    });
    const out = await json(res);
    expect(res.status, JSON.stringify(out).slice(0, 300)).toBe(502);
    expect(out).toMatchObject({ code: "transport", retryable: false, message: expect.stringMatching(/larger than \d+ bytes/) });
    // The server and the box go on.
    const ok = await api(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["echo", "still here"] } });
    expect((await json(ok)).stdout).toBe("still here\n");
  });

  it("the agent's health answer says nothing about secrets", async () => {
    const res = await fetch(`http://${ip}:7070/health`);
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).not.toContain(agentSecretOf(server, box.id));
    expect(Object.keys(JSON.parse(text)).sort()).toEqual(["ok", "screens"]);
  });
});

describe("secrets stay out of what runs in the box", () => {
  async function environOf(name: string): Promise<string[]> {
    const out = await execIn(box.id, ["sh", "-c", `for p in $(pgrep -x ${name}); do tr '\\0' '\\n' < /proc/$p/environ; echo ---; done`]);
    return out.out.split("---\n").filter((s) => s.trim());
  }

  it("Chromium, fluxbox, x11vnc, PID 1, a docker exec and an exec'd command carry neither the agent secret nor the VNC password", async () => {
    const secret = agentSecretOf(server, box.id);
    const vnc = vncPasswordOf(server, box.id);
    const chromium = await environOf("chromium");
    const fluxbox = await environOf("fluxbox");
    const x11vnc = await environOf("x11vnc");
    expect(chromium.length).toBeGreaterThan(0);
    expect(fluxbox.length).toBeGreaterThan(0);
    expect(x11vnc.length).toBeGreaterThan(0);
    const pid1 = (await execIn(box.id, ["sh", "-c", "tr '\\0' '\\n' < /proc/1/environ"])).out;
    const dockerExec = (await execIn(box.id, ["env"])).out;
    const exec = await json(await api(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["env"] } }));
    expect(exec.stdout).toContain("PATH=");
    const cmdlines = (await execIn(box.id, ["sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"])).out;
    for (const text of [...chromium, ...fluxbox, ...x11vnc, pid1, dockerExec, exec.stdout, cmdlines]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(vnc);
      expect(text).not.toContain("HOLM_AGENT_SECRET");
    }
  });
});
