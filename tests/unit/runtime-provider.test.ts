import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { PROVIDERS, provider } from "~/runtime/provider.server";
import { fingerprint, normalHostKey } from "~/runtime/ssh-engine.server";
import { sshKeyPair } from "../support/ssh-keys";

// The docker provider's checks on an added runtime (ADR 0017), without a server: what a host may
// be, which secrets go with which host, and messages that never carry a secret's value.

const docker = provider("docker");
const key = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
// What ssh-keygen makes: an OpenSSH private key, and a host's public key line.
const sshKey = sshKeyPair().private;
const hostKey = sshKeyPair().public;
const ssh = (host: string, extra: Record<string, unknown> = {}) => ({ host, host_key: hostKey, ...extra });

function refusal(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (e) {
    return e as { code: string; message: string };
  }
  throw new Error("accepted");
}

describe("the docker provider", () => {
  it("takes tcp:// and ssh:// hosts only, and no other field", () => {
    expect(docker.check(ssh("ssh://holm@engine.example:22/"), { ssh_key: sshKey })).toEqual(ssh("ssh://holm@engine.example:22"));
    expect(docker.check(ssh("ssh://[2001:db8::1]"), { ssh_key: sshKey })).toEqual(ssh("ssh://[2001:db8::1]"));
    for (const host of ["unix:///var/run/docker.sock", "http://engine.example", "tcp://engine.example/path", "tcp://a b", ""]) {
      expect(refusal(() => docker.check({ host }, {})).message, host).toMatch(/^fields\.host: /);
    }
    expect(refusal(() => docker.check(ssh("ssh://e.example", { tls: true }), { ssh_key: sshKey })).message).toBe('unknown key "tls" in fields');
    expect(refusal(() => docker.check({}, {})).message).toMatch(/^fields\.host/);
  });

  it("a tcp:// engine needs all three TLS secrets and takes no host key; an ssh:// one takes ssh_key and ssh_passphrase only", () => {
    expect(refusal(() => docker.check({ host: "tcp://e.example:2376" }, {})).message).toMatch(/missing ca, cert, key/);
    expect(refusal(() => docker.check({ host: "tcp://e.example:2376" }, { ssh_key: sshKey })).message).toMatch(/secrets\.ssh_key: a tcp:\/\/ engine takes/);
    expect(refusal(() => docker.check({ host: "tcp://e.example:2376", host_key: hostKey }, {})).message).toMatch(/^fields\.host_key: only an ssh:\/\/ engine/);
    expect(refusal(() => docker.check(ssh("ssh://e.example"), { ssh_key: sshKey, cert: "x" })).message).toMatch(/secrets\.cert: an ssh:\/\/ engine takes "ssh_key" and "ssh_passphrase"/);
    expect(refusal(() => docker.check(ssh("ssh://e.example"), { token: "x" })).message).toMatch(/unknown key "token"/);
    expect(refusal(() => docker.check(ssh("ssh://e.example"), {})).message).toMatch(/^secrets: an ssh:\/\/ engine needs ssh_key/);
  });

  it("an ssh:// engine needs its host key pinned (no trust on first use): a key line or a SHA256 fingerprint", () => {
    expect(refusal(() => docker.check({ host: "ssh://e.example" }, { ssh_key: sshKey })).message).toMatch(/^fields\.host_key: an ssh:\/\/ engine needs its host key pinned/);
    for (const bad of ["", "ssh-ed25519", "ssh-ed25519 not-base64", "MD5:aa:bb", "SHA256:short", "ssh-dss AAAAB3NzaC1kc3M="]) {
      expect(refusal(() => docker.check(ssh("ssh://e.example", { host_key: bad }), { ssh_key: sshKey })).message, bad).toMatch(/^fields\.host_key: not /);
    }
    // An `ssh-keyscan` line and a .pub file line: the host name and the comment are dropped.
    const [type, b64] = hostKey.split(" ");
    expect(normalHostKey(`engine.example ${type} ${b64}`)).toBe(`${type} ${b64}`);
    expect(normalHostKey(`${type} ${b64} root@engine`)).toBe(`${type} ${b64}`);
    const fp = fingerprint(Buffer.from(b64!, "base64"));
    expect(fp).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(docker.check(ssh("ssh://e.example", { host_key: `${fp}=` }), { ssh_key: sshKey })).toEqual({ host: "ssh://e.example", host_key: fp });
  });

  it("the ssh key must be one ssh can use, and decrypt with its passphrase; no message quotes either", () => {
    const secret = "-----BEGIN PRIVATE KEY-----\nthis-is-the-secret-value\n-----END PRIVATE KEY-----\n";
    const e = refusal(() => docker.check(ssh("ssh://e.example"), { ssh_key: secret }));
    expect(e).toMatchObject({ code: "bad_request", message: "secrets.ssh_key: not a private key for ssh (OpenSSH, or PEM RSA/EC)" });
    expect(e.message).not.toContain("secret-value");
    // PKCS#8 (what node:crypto exports) is not a format ssh reads.
    expect(refusal(() => docker.check(ssh("ssh://e.example"), { ssh_key: key })).message).toMatch(/^secrets\.ssh_key: not a private key/);
    expect(refusal(() => docker.check(ssh("ssh://e.example"), { ssh_key: hostKey })).message).toMatch(/^secrets\.ssh_key: not a private key|a public key/);
    const locked = sshKeyPair({ passphrase: "pass-word-42", cipher: "aes256-cbc", rounds: 4 }).private;
    expect(refusal(() => docker.check(ssh("ssh://e.example"), { ssh_key: locked })).message).toBe("secrets.ssh_key is encrypted: secrets.ssh_passphrase is needed");
    const wrong = refusal(() => docker.check(ssh("ssh://e.example"), { ssh_key: locked, ssh_passphrase: "not-it" }));
    expect(wrong.message).toBe("secrets.ssh_passphrase does not decrypt secrets.ssh_key");
    expect(docker.check(ssh("ssh://e.example"), { ssh_key: locked, ssh_passphrase: "pass-word-42" })).toEqual(ssh("ssh://e.example"));
  });

  it("tcp:// and pinned ssh:// engines launch (ADR 0019); an ssh:// one stored unpinned does not, and says why; another provider is unsupported", () => {
    expect(docker.notLaunchable({ host: "tcp://e.example:2376" })).toBeUndefined();
    expect(docker.can({ host: "tcp://e.example:2376" })).toMatchObject({ launch: true, pages: true, screens: 8 });
    expect(docker.notLaunchable(ssh("ssh://e.example"))).toBeUndefined();
    expect(docker.can(ssh("ssh://e.example"))).toMatchObject({ launch: true, pages: true, screens: 8 });
    expect(docker.notLaunchable({ host: "ssh://e.example" })).toMatch(/needs fields\.host_key/);
    expect(docker.can({ host: "ssh://e.example" }).launch).toBe(false);
    expect(refusal(() => provider("e2b"))).toMatchObject({ code: "unsupported", message: expect.stringContaining(`providers: ${[...PROVIDERS.keys()].join(", ")}`) });
  });
});

describe("remote engine helpers", () => {
  it("gives each box its own loopback address, the same every time, clear of 127.0.0.x", async () => {
    const { loopbackAddress } = await import("~/runtime/exec-tunnel.server");
    const a = loopbackAddress("far\u0000box_1");
    expect(a).toBe(loopbackAddress("far\u0000box_1"));
    expect(a).not.toBe(loopbackAddress("far\u0000box_2"));
    for (let i = 0; i < 200; i++) {
      const [x, y, b, c] = loopbackAddress(`far\u0000box_${i}`).split(".").map(Number);
      expect(x).toBe(127);
      expect(y).toBeGreaterThanOrEqual(16);
      expect(y).toBeLessThan(240);
      expect(b).toBeLessThanOrEqual(255);
      expect(c).toBeGreaterThanOrEqual(1);
      expect(c).toBeLessThanOrEqual(254);
    }
  });

  it("writes the bridge rules as one script for the remote host's own iptables, quoted, DOCKER-USER when there", async () => {
    const { bridgeRules, guardScript } = await import("~/runtime/firewall.server");
    const script = guardScript(["br-abc"]);
    expect(script).toContain("if iptables -w -S DOCKER-USER >/dev/null 2>&1; then F=DOCKER-USER; else F=FORWARD; fi");
    expect(script).toContain(`ensure iptables 'INPUT' '-i' 'br-abc' '-m' 'conntrack' '--ctstate' 'NEW' '-j' 'DROP'`);
    expect(script).toContain(`ensure iptables "$F" '-i' 'br-abc' '-d' '169.254.0.0/16' '-j' 'DROP'`);
    expect(script).toContain(`if [ -d /proc/sys/net/ipv6 ]; then ensure ip6tables 'FORWARD' '-i' 'br-abc' '-j' 'DROP'; fi`);
    expect(script.split("\n").filter((l) => l.includes("ensure ")).length).toBe(bridgeRules("br-abc", "X").length);
  });
});

describe("the swarm provider (ADR 0022)", () => {
  const swarm = provider("swarm");

  it("takes a manager's tcp:// engine, an engine port and constraints; needs all three TLS secrets", () => {
    expect(refusal(() => swarm.check({ host: "ssh://m.example" }, {})).message).toMatch(/^fields\.host: /);
    expect(refusal(() => swarm.check({ host: "tcp://m.example:2376" }, {})).message).toMatch(/missing ca, cert, key/);
    expect(refusal(() => swarm.check({ host: "tcp://m.example:2376" }, { ssh_key: key })).message).toMatch(/unknown key "ssh_key"/);
    expect(refusal(() => swarm.check({ host: "tcp://m.example:2376", constraints: ["no operator"] }, {})).message).toMatch(/fields\.constraints/);
    expect(refusal(() => swarm.check({ host: "tcp://m.example:2376", engine_port: 0 }, {})).message).toMatch(/fields\.engine_port/);
  });

  it("can do what a box on one engine can, less stop and persistent files", () => {
    expect(swarm.notLaunchable({ host: "tcp://m.example:2376" })).toBeUndefined();
    expect(swarm.can({ host: "tcp://m.example:2376" })).toMatchObject({ launch: true, pages: true, pause: true, stop: false, persistent: false });
  });
});

describe("swarm placement arithmetic", () => {
  const GIB = 1024 ** 3;
  const node = (id: string, mem: number, extra: Record<string, unknown> = {}) => ({
    ID: id,
    Description: { Hostname: id, Resources: { MemoryBytes: mem * GIB, NanoCPUs: 2e9 } },
    Spec: { Availability: "active" },
    Status: { State: "ready", Addr: "10.0.0.1" },
    ...extra,
  });
  const task = (nodeId: string, mem: number, state = "running", desired = "running") => ({
    ID: `t-${Math.random()}`,
    ServiceID: "s",
    NodeID: nodeId,
    DesiredState: desired,
    Spec: { Resources: { Reservations: { MemoryBytes: mem * GIB } } },
    Status: { State: state },
  });

  it("a node fits when its memory less its running tasks' reservations holds the box; drained and down nodes never do", async () => {
    const { placementRefusal } = await import("~/runtime/swarm-node.server");
    const snap = (nodes: ReturnType<typeof node>[], tasks: ReturnType<typeof task>[]) => ({ nodes: new Map(nodes.map((n) => [n.ID, n])), tasks });
    expect(placementRefusal(snap([node("a", 8)], [task("a", 4)]), 2 * GIB, 0)).toBeUndefined();
    // Ended tasks reserve nothing.
    expect(placementRefusal(snap([node("a", 8)], [task("a", 7, "shutdown", "shutdown")]), 2 * GIB, 0)).toBeUndefined();
    expect(placementRefusal(snap([node("a", 8)], [task("a", 7)]), 2 * GIB, 0)).toMatch(/a \(a\) has 1\.0 GiB free/);
    expect(placementRefusal(snap([node("a", 8, { Spec: { Availability: "drain" } })], []), 2 * GIB, 0)).toMatch(/is drained/);
    expect(placementRefusal(snap([node("a", 8, { Status: { State: "down" } })], []), 2 * GIB, 0)).toMatch(/is down/);
    expect(placementRefusal(snap([node("a", 8)], []), 2 * GIB, 3e9)).toMatch(/2\.0 CPUs free/);
    expect(placementRefusal(snap([], []), GIB, 0)).toBe("the swarm has no nodes");
  });
});
