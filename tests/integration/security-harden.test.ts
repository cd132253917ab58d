import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import dgram from "node:dgram";
import fs from "node:fs";
import net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { consoleClient } from "../support/console";
import { arpReply, ipv6Udp, sendFrameArgv } from "../support/raw-frames";
import { RUN_LABEL, type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";

// Issue 10, point 4: what a process in a box can do to the host, to other boxes and to the
// machine. Each attack runs from inside real boxes launched through the built server; each
// refusal has a positive control so it cannot pass by accident.

const LIMITS = {
  HOLM_BOX_MEMORY: "768m",
  HOLM_BOX_MEMORY_MAX: "4g",
  HOLM_BOX_PIDS: "512",
  HOLM_WORKSPACE_BOXES: "2",
  HOLM_WORKSPACE_IMAGE_BUILDS: "1",
};
const MIB = 1024 ** 2;
// Tiny Debian packages no other test asks for: the image-build quota test builds images with them.
const BUILD_PACKAGES = ["hello", "sl"];
/** Asked for over the build limit, so never built. */
const REFUSED_PACKAGE = "cowsay";

let server: TestServer;
let boxA: any;
let boxB: any;
const cleanups: (() => unknown)[] = [];
/** Run after the boxes are gone (an image in use cannot be removed). */
const lastCleanups: (() => Promise<unknown>)[] = [];

function sh(...argv: string[]): string {
  return execFileSync(argv[0]!, argv.slice(1), { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

async function exec(id: string, argv: string[], timeout_ms = 20_000, auth?: string) {
  const res = await server.api(`/v1/boxes/${id}/exec`, {
    method: "POST",
    json: { argv, timeout_ms },
    ...(auth ? { headers: { authorization: auth } } : {}),
  });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body as { code: number | null; stdout: string; stderr: string; timed_out: boolean; signal?: string };
}

async function createBox(body: unknown, auth?: string) {
  const res = await server.api("/v1/boxes", { method: "POST", json: body, ...(auth ? { headers: { authorization: auth } } : {}) });
  return { status: res.status, body: await json(res) };
}

async function removeBox(id: string, auth?: string) {
  const headers: Record<string, string> = { "x-holm-confirm-delete": "true" };
  if (auth) headers.authorization = auth;
  const res = await server.api(`/v1/boxes/${id}`, { method: "DELETE", headers });
  expect(res.status).toBe(200);
}

async function container(id: string) {
  const info = await docker.getContainer(`holm-${id}`).inspect();
  const [netName, n] = Object.entries(info.NetworkSettings.Networks)[0]!;
  const network = await docker.getNetwork(netName).inspect();
  const bridge = network.Options?.["com.docker.network.bridge.name"] ?? `br-${String(network.Id).slice(0, 12)}`;
  return { info, ip: n.IPAddress, mac: n.MacAddress, gateway: n.Gateway, bridge, network: netName };
}

function hostMac(bridge: string) {
  return fs.readFileSync(`/sys/class/net/${bridge}/address`, "utf8").trim();
}

/** The MAC the host's neighbour table holds for `ip` on `bridge`, if any. */
function neighbour(ip: string, bridge: string): string | undefined {
  return /lladdr ([0-9a-f:]{17})/.exec(sh("ip", "neigh", "show", ip, "dev", bridge))?.[1];
}

function cgroupFile(containerId: string, file: string): string {
  return fs.readFileSync(`/sys/fs/cgroup/pids/docker/${containerId}/${file}`, "utf8").trim();
}

async function timed<T>(fn: () => Promise<T>): Promise<number> {
  const t0 = Date.now();
  await fn();
  return Date.now() - t0;
}

beforeAll(async () => {
  server = await startServer(LIMITS);
  const [a, b] = await Promise.all([createBox({}), createBox({})]);
  expect(a.status, JSON.stringify(a.body)).toBe(200);
  expect(b.status, JSON.stringify(b.body)).toBe(200);
  boxA = a.body;
  boxB = b.body;
});

afterAll(async () => {
  for (const c of cleanups.reverse()) {
    try {
      await c();
    } catch {}
  }
  await server?.stop();
  await removeTestBoxes();
  for (const c of lastCleanups) await c().catch(() => {});
});

describe("capabilities", () => {
  it("a box process holds no capability but SETGID and cannot gain one (CapDrop ALL, no-new-privileges)", async () => {
    const r = await exec(boxA.id, ["grep", "-E", "^(Cap(Prm|Eff|Bnd|Amb)|NoNewPrivs):", "/proc/self/status", "/proc/1/status"]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines).toHaveLength(10);
    for (const line of lines) {
      if (line.includes("NoNewPrivs")) expect(line).toMatch(/NoNewPrivs:\s+1$/);
      else if (line.includes("CapAmb")) expect(line).toMatch(/:\s+0000000000000000$/);
      else expect(line, "CAP_SETGID (bit 6) only").toMatch(/:\s+0000000000000040$/);
    }
    // What SETGID is kept for: xterm's pty set-up calls setgroups() and exits without it.
    const xterm = await exec(boxA.id, ["bash", "-c", "DISPLAY=:99 timeout 3 xterm -e sleep 10; echo rc=$?"]);
    expect(xterm.stdout.trim(), "xterm stayed up until timeout killed it").toBe("rc=124");
    const { info } = await container(boxA.id);
    expect(info.HostConfig.CapDrop).toEqual(["ALL"]);
    expect(info.HostConfig.CapAdd).toEqual(["SETGID"]);
    expect(info.HostConfig.SecurityOpt).toContain("no-new-privileges");
  });

  it("a box cannot open a raw IP socket or a packet socket (NET_RAW is gone)", async () => {
    const perl = (domain: string, type: string, proto: number) =>
      `use Socket; socket(my $s, ${domain}, ${type}, ${proto}) or die "EPERM? $!\\n"; print "opened\\n"`;
    for (const script of [perl("17", "SOCK_RAW", 0), perl("PF_INET", "SOCK_RAW", 1)]) {
      const r = await exec(boxA.id, ["perl", "-e", script]);
      expect(r.stdout).not.toContain("opened");
      expect(r.stderr).toContain("Operation not permitted");
    }
    // Control: the same perl opens an ordinary socket.
    const ok = await exec(boxA.id, ["perl", "-e", perl("PF_INET", "SOCK_STREAM", 0)]);
    expect(ok.stdout).toContain("opened");
  });

  it("ARP spoofing: a box cannot tell the host that another box's address is its own", async () => {
    const a = await container(boxA.id);
    const b = await container(boxB.id);
    expect(a.bridge).toBe(b.bridge);
    // The server talks to B, so the host holds B's real MAC.
    await exec(boxB.id, ["true"]);
    expect(neighbour(b.ip, b.bridge)).toBe(b.mac);
    cleanups.push(() => sh("ip", "neigh", "del", b.ip, "dev", b.bridge));
    const frame = arpReply({ attackerMac: a.mac, claimedIp: b.ip, victimMac: hostMac(a.bridge), victimIp: a.gateway });
    const r = await exec(boxA.id, sendFrameArgv(frame));
    await new Promise((res) => setTimeout(res, 300));
    expect(neighbour(b.ip, b.bridge), "the host now sends B's traffic (the agent's bearer secret) to A").toBe(b.mac);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("Operation not permitted");
    // And B is still the one that answers.
    expect((await exec(boxB.id, ["cat", "/proc/sys/kernel/hostname"])).stdout.trim()).toBe(b.info.Config.Hostname);
  });

  it("a box with the audio feature still starts and plays without capabilities, within its own memory limit", async () => {
    const { status, body } = await createBox({ spec: { desktop: { features: ["audio"] } }, placement: { memory: "1g" } });
    expect(status, JSON.stringify(body)).toBe(200);
    try {
      const r = await exec(body.id, ["pactl", "info"]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/Server Protocol Version/);
      const caps = await exec(body.id, ["grep", "CapEff", "/proc/1/status"]);
      expect(caps.stdout).toMatch(/0000000000000040/);
      const { info } = await container(body.id);
      expect(info.HostConfig.Memory).toBe(1024 * MIB);
    } finally {
      await removeBox(body.id);
    }
  });
});

describe("resource limits", () => {
  it("every box gets the default memory limit (no swap beyond it); placement.memory overrides within the maximum", async () => {
    const { info } = await container(boxA.id);
    expect(info.HostConfig.Memory).toBe(768 * MIB);
    expect(info.HostConfig.MemorySwap).toBe(768 * MIB);
    for (const memory of ["64g", "100m"]) {
      const { status, body } = await createBox({ placement: { memory } });
      expect(status, JSON.stringify(body)).toBe(400);
      expect(body.code).toBe("bad_request");
      expect(body.message).toMatch(/placement\.memory/);
      expect(body.retryable).toBe(false);
    }
  });

  it("a process that allocates past the box's memory is killed and the box lives on", async () => {
    const hog = "const a=[];for(let i=0;i<24;i++)a.push(Buffer.alloc(64<<20,1));console.log('allocated',a.length*64,'MiB')";
    const r = await exec(boxA.id, ["node", "-e", hog], 60_000);
    expect(r.stdout, "1.5 GiB fit into a 768 MiB box").not.toContain("allocated");
    expect(r.code === 137 || r.signal === "SIGKILL" || r.code === null).toBe(true);
    expect((await exec(boxA.id, ["true"])).code).toBe(0);
    const frame = await server.api(`/v1/boxes/${boxA.id}/screens/0/frame`);
    expect(frame.status).toBe(200);
  });

  it("a box holds at most HOLM_BOX_PIDS tasks", async () => {
    const { info } = await container(boxA.id);
    expect(info.HostConfig.PidsLimit).toBe(512);
    expect(cgroupFile(info.Id, "pids.max")).toBe("512");
    // Bounded, so it is harmless on a box without a limit: 1,500 sleeping children.
    const spawner = `
      const {spawn} = require("child_process"); const N = 1500; const kids = []; let ok = 0, fail = 0;
      const done = () => { if (ok + fail < N) return; for (const k of kids) k.kill("SIGKILL"); console.log(JSON.stringify({ok, fail})); process.exit(0); };
      for (let i = 0; i < N; i++) { const c = spawn("sleep", ["30"], {stdio: "ignore"}); kids.push(c);
        c.on("spawn", () => { ok++; done(); }); c.on("error", () => { fail++; done(); }); }`;
    const r = await exec(boxA.id, ["node", "-e", spawner], 60_000);
    const counts = JSON.parse(r.stdout.trim().split("\n").pop() ?? "{}");
    expect(counts.ok).toBeGreaterThan(0);
    expect(counts.ok).toBeLessThan(512);
    expect(counts.fail).toBeGreaterThan(0);
  });

  it("a fork bomb in one box: that box survives, the server and another box stay responsive", async () => {
    const a = await container(boxA.id);
    // On a box without a pids limit the bomb would take the shared host down: refuse to run it.
    expect(a.info.HostConfig.PidsLimit, "no pids limit: not fork-bombing the host").toBeGreaterThan(0);
    // The shell waits after lighting it, so the exec's timeout kills the whole process group.
    const bomb = exec(boxA.id, ["bash", "-c", "b() { b | b & }; b; sleep 60"], 10_000);
    // The bomb's growth is the machine's pace: on a busy machine (CI beside the e2e suite) 2 s
    // were once not enough to pass 400 tasks. Watch it grow for up to 8 s, keeping the peak.
    let peak = 0;
    for (const until = Date.now() + 8000; Date.now() < until && peak <= 400; ) {
      await new Promise((r) => setTimeout(r, 100));
      peak = Math.max(peak, Number(cgroupFile(a.info.Id, "pids.current")));
    }
    expect(peak).toBeGreaterThan(400);
    // A `docker exec` joins the cgroup past pids.max (a fork cannot): the test's own reader counts.
    expect(peak).toBeLessThanOrEqual(512 + 2);
    const health: number[] = [];
    const other: number[] = [];
    for (let i = 0; i < 5; i++) {
      health.push(await timed(async () => expect((await fetch(`${server.base}/v1/health`)).status).toBe(200)));
      other.push(await timed(async () => expect((await exec(boxB.id, ["true"])).code).toBe(0)));
    }
    const r = await bomb;
    expect(r.timed_out).toBe(true);
    // Generous bounds for a shared 2-core machine; without the limit these calls do not return.
    expect(Math.max(...health), `health ms: ${health}`).toBeLessThan(3000);
    expect(Math.max(...other), `box B exec ms: ${other}`).toBeLessThan(5000);
    const deadline = Date.now() + 20_000;
    while (Number(cgroupFile(a.info.Id, "pids.current")) > 300 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 250));
    expect(Number(cgroupFile(a.info.Id, "pids.current"))).toBeLessThan(300);
    expect((await exec(boxA.id, ["true"])).code).toBe(0);
    const box = await json(await server.api(`/v1/boxes/${boxA.id}`));
    expect(box.state).toBe("ready");
    const shot = await server.api(`/v1/boxes/${boxA.id}/screens/0/frame`);
    expect(shot.status).toBe(200);
  });
});

describe("network", () => {
  let llService: ChildProcess | undefined;
  const NS = `holmll${process.pid % 100000}`;
  const METADATA = "169.254.169.254";
  const OUTSIDE = "10.250.78.2";

  beforeAll(() => {
    // A metadata-like service at 169.254.169.254, one hop beyond the host (as a cloud provides it).
    sh("ip", "netns", "add", NS);
    cleanups.push(() => sh("ip", "netns", "del", NS));
    sh("ip", "link", "add", `${NS}h`, "type", "veth", "peer", "name", `${NS}n`);
    cleanups.push(() => sh("ip", "link", "del", `${NS}h`));
    sh("ip", "link", "set", `${NS}n`, "netns", NS);
    sh("ip", "addr", "add", "169.254.169.253/30", "dev", `${NS}h`);
    sh("ip", "link", "set", `${NS}h`, "up");
    sh("ip", "netns", "exec", NS, "ip", "addr", "add", `${METADATA}/30`, "dev", `${NS}n`);
    // The same service at an ordinary address too: the positive control for a box.
    sh("ip", "addr", "add", "10.250.78.1/30", "dev", `${NS}h`);
    sh("ip", "netns", "exec", NS, "ip", "addr", "add", `${OUTSIDE}/30`, "dev", `${NS}n`);
    sh("ip", "netns", "exec", NS, "ip", "link", "set", `${NS}n`, "up");
    sh("ip", "netns", "exec", NS, "ip", "link", "set", "lo", "up");
    // A client that closes before the answer is written makes that write fail (ECONNRESET): the
    // service ignores it, or it died of it and refused every later connection (a CI run's
    // positive control was refused 8 times in 8 s so).
    llService = spawn(
      "ip",
      ["netns", "exec", NS, process.execPath, "-e", `require("net").createServer((s) => { s.on("error", () => {}); s.end("meta\\n"); }).listen(80, "0.0.0.0")`],
      { stdio: "ignore" },
    );
    cleanups.push(() => llService?.kill());
  });

  async function canConnect(id: string, host: string, port: number) {
    const r = await exec(id, ["timeout", "3", "bash", "-c", `exec 3<>/dev/tcp/${host}/${port}`]);
    return r.code === 0;
  }

  it("a box cannot reach a link-local (metadata) address, which the host reaches", async () => {
    let hostReached = false;
    const deadline = Date.now() + 5000;
    while (!hostReached && Date.now() < deadline) {
      hostReached = await new Promise<boolean>((resolve) => {
        const s = net.connect(80, METADATA, () => {
          s.destroy();
          resolve(true);
        });
        s.once("error", () => resolve(false));
      });
      if (!hostReached) await new Promise((r) => setTimeout(r, 100));
    }
    expect(hostReached).toBe(true);
    // Control: the box reaches the same service at an ordinary address beyond the host (several
    // tries, for a loaded machine; the refusals CI saw were the service dead of a reset, above).
    // The blocked addresses below must fail every time.
    let reached = false;
    const tries: string[] = [];
    for (let i = 0; i < 8 && !reached; i++) {
      const r = await exec(boxA.id, ["timeout", "3", "bash", "-c", `exec 3<>/dev/tcp/${OUTSIDE}/80`]);
      reached = r.code === 0;
      if (!reached) tries.push(`code ${r.code}: ${r.stderr.trim()}`);
      if (!reached) await new Promise((res) => setTimeout(res, 1000));
    }
    expect(reached, tries.join("; ")).toBe(true);
    expect(await canConnect(boxA.id, METADATA, 80)).toBe(false);
    expect(await canConnect(boxA.id, "169.254.169.253", 80)).toBe(false);
  });

  async function udp6Listener() {
    const sock = dgram.createSocket({ type: "udp6", ipv6Only: false });
    const got: string[] = [];
    sock.on("message", (m) => got.push(m.toString()));
    await new Promise<void>((r) => sock.bind(0, "::", () => r()));
    cleanups.push(() => sock.close());
    return { sock, port: sock.address().port, got };
  }

  function bridgeLinkLocal(bridge: string): string {
    const m = /inet6 (fe80::[0-9a-f:]+)\/64/.exec(sh("ip", "-6", "addr", "show", "dev", bridge));
    if (!m) throw new Error(`${bridge} has no IPv6 link-local address`);
    return m[1]!;
  }

  it("a box cannot reach the host over IPv6 (no IPv6 in the box, no packet socket to fake it)", async () => {
    const a = await container(boxA.id);
    const { port, got } = await udp6Listener();
    const hostLl = bridgeLinkLocal(a.bridge);
    // Control: the listener answers on the bridge's link-local address.
    const probe = dgram.createSocket("udp6");
    await new Promise<void>((r) => probe.send("control", port, `${hostLl}%${a.bridge}`, () => r()));
    probe.close();
    const v6 = await exec(boxA.id, ["cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6", "/proc/sys/net/ipv6/conf/eth0/disable_ipv6"]);
    expect(v6.stdout.trim().split("\n")).toEqual(["1", "1"]);
    const frame = ipv6Udp({ srcMac: a.mac, dstMac: hostMac(a.bridge), srcIp: "fe80::bad:1", dstIp: hostLl, srcPort: 4444, dstPort: port, payload: Buffer.from("from-box") });
    const r = await exec(boxA.id, sendFrameArgv(frame));
    await new Promise((res) => setTimeout(res, 500));
    expect(got).toContain("control");
    expect(got).not.toContain("from-box");
    expect(r.stderr).toContain("Operation not permitted");
  });

  it("the host's ip6tables drops IPv6 from the box bridges even for a process that has NET_RAW", async () => {
    const a = await container(boxA.id);
    // Not a box: a container of our own with Docker's default capabilities on the box network, to
    // prove the firewall layer by itself (as if a box ever got NET_RAW back).
    const raw = await docker.createContainer({
      name: `holm-test-raw-${process.pid}`,
      Image: a.info.Config.Image,
      Entrypoint: ["sleep", "300"],
      Labels: { "holm.test": RUN_LABEL },
      HostConfig: { NetworkMode: a.network },
    });
    cleanups.push(() => raw.remove({ force: true }));
    await raw.start();
    const rawInfo = await raw.inspect();
    const rawMac = rawInfo.NetworkSettings.Networks[a.network]!.MacAddress;
    const { port, got } = await udp6Listener();
    const hostLl = bridgeLinkLocal(a.bridge);
    const frame = ipv6Udp({ srcMac: rawMac, dstMac: hostMac(a.bridge), srcIp: "fe80::bad:2", dstIp: hostLl, srcPort: 4444, dstPort: port, payload: Buffer.from("from-raw") });
    const run = await raw.exec({ Cmd: sendFrameArgv(frame), AttachStdout: true, AttachStderr: true });
    const stream = await run.start({});
    await new Promise((r) => stream.on("end", r).resume());
    expect((await run.inspect()).ExitCode, "the raw container could not even send").toBe(0);
    await new Promise((res) => setTimeout(res, 500));
    expect(got).not.toContain("from-raw");
  });

  it("the firewall rules are there once per box bridge, also after a restart (idempotent)", async () => {
    await server.stop();
    server = await server.restart();
    // The server checks its rules at boot, before any box is created.
    for (const netName of ["holm", "holm-internal"]) {
      const network = await docker.getNetwork(netName).inspect();
      const bridge = network.Options?.["com.docker.network.bridge.name"] ?? `br-${String(network.Id).slice(0, 12)}`;
      const v4 = sh("iptables", "-w", "-S").split("\n");
      const v6 = sh("ip6tables", "-w", "-S").split("\n");
      const once = (rules: string[], want: string) => expect(rules.filter((l) => l === want), want).toHaveLength(1);
      once(v4, `-A INPUT -i ${bridge} -m conntrack --ctstate NEW -j DROP`);
      once(v4, `-A DOCKER-USER -d 169.254.0.0/16 -i ${bridge} -j DROP`);
      once(v6, `-A INPUT -i ${bridge} -j DROP`);
      once(v6, `-A FORWARD -i ${bridge} -j DROP`);
    }
  });
});

describe("workspace quotas", () => {
  let keyA: string;
  let keyB: string;

  beforeAll(async () => {
    const { form, page, csrfIn, signUp, createKey } = consoleClient(server);
    const ada = await signUp("ada@example.com", "A");
    await form(ada, "/settings", { intent: "signups", open: "true", csrf: csrfIn(await page(ada, "/settings")) });
    const bob = await signUp("bob@example.com", "B");
    keyA = `Bearer ${(await createKey(ada, "quota")).secret}`;
    keyB = `Bearer ${(await createKey(bob, "quota")).secret}`;
  });

  // Each test starts with empty workspaces, whatever the one before left.
  afterEach(async () => {
    for (const key of [keyA, keyB]) {
      const { boxes } = await json(await server.api("/v1/boxes", { headers: { authorization: key } }));
      for (const b of boxes) await removeBox(b.id, key);
    }
  });

  it("the (N+1)th live box of a workspace is refused with 409 denied; removing one lets the next in; other workspaces are unaffected", async () => {
    const first = await Promise.all([createBox({}, keyA), createBox({}, keyA)]);
    for (const r of first) expect(r.status, JSON.stringify(r.body)).toBe(200);
    const refused = await createBox({}, keyA);
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({ code: "denied", retryable: true, message: expect.stringMatching(/2 live boxes.*HOLM_WORKSPACE_BOXES/) });
    const other = await createBox({}, keyB);
    expect(other.status, JSON.stringify(other.body)).toBe(200);
    // The server token is not a workspace and has no quota: boxA and boxB are already two.
    const operator = await createBox({ spec: { policy: { network: false } } });
    expect(operator.status, JSON.stringify(operator.body)).toBe(200);
    await removeBox(first[0]!.body.id, keyA);
    const next = await createBox({}, keyA);
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    for (const id of [first[1]!.body.id, next.body.id]) await removeBox(id, keyA);
    await removeBox(other.body.id, keyB);
    await removeBox(operator.body.id);
  });

  it("concurrent creates cannot overshoot the limit", async () => {
    const results = await Promise.all([1, 2, 3, 4].map(() => createBox({}, keyA)));
    const ok = results.filter((r) => r.status === 200);
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 409, 409]);
    for (const r of ok) await removeBox(r.body.id, keyA);
  });

  it("new image builds are limited per workspace; an image that exists costs nothing", async () => {
    // Only this test builds images with these packages: whatever an earlier run could not
    // remove (a busy engine once refused) goes first, so each build here is a new one.
    const ours = async () =>
      (await docker.listImages({ filters: { label: ["holm.image=x11"] } })).filter((i) => BUILD_PACKAGES.includes(i.Labels?.["holm.packages"] ?? ""));
    const removeOurs = async () => {
      for (const img of await ours()) await docker.getImage(img.Id).remove({ force: true }).catch(() => {});
    };
    await removeOurs();
    expect((await ours()).map((i) => i.Id), "images an earlier run of this test left, still there: docker rmi them").toEqual([]);
    // The images this test builds are removed again, so the next run builds them anew.
    lastCleanups.push(removeOurs);
    const packages = (p: string) => ({ spec: { desktop: { packages: [p] } } });
    // Another workspace has its own allowance: its build runs beside the first one (the two
    // builds are most of this test's time), since one workspace's count says nothing of the other's.
    const otherWs = createBox(packages(BUILD_PACKAGES[1]!), keyA);
    const first = await createBox(packages(BUILD_PACKAGES[0]!), keyB);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // Not the package the other workspace is building: an image being built already counts as
    // there, for anyone. This one is refused before anything is built.
    const second = await createBox(packages(REFUSED_PACKAGE), keyB);
    expect(second.status, JSON.stringify(second.body)).toBe(409);
    expect(second.body).toEqual({ code: "denied", retryable: true, message: expect.stringMatching(/1 new image.*HOLM_WORKSPACE_IMAGE_BUILDS/) });
    await removeBox(first.body.id, keyB);
    // The same image again is no new build.
    const again = await createBox(packages(BUILD_PACKAGES[0]!), keyB);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    await removeBox(again.body.id, keyB);
    const other = await otherWs;
    expect(other.status, JSON.stringify(other.body)).toBe(200);
    await removeBox(other.body.id, keyA);
  });
});
