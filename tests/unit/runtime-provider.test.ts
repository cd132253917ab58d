import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { PROVIDERS, provider } from "~/runtime/provider.server";

// The docker provider's checks on an added runtime (ADR 0017), without a server: what a host may
// be, which secrets go with which host, and messages that never carry a secret's value.

const docker = provider("docker");
const key = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();

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
    expect(docker.check({ host: "ssh://holm@engine.example:22/" }, {})).toEqual({ host: "ssh://holm@engine.example:22" });
    expect(docker.check({ host: "ssh://[2001:db8::1]" }, { ssh_key: key })).toEqual({ host: "ssh://[2001:db8::1]" });
    for (const host of ["unix:///var/run/docker.sock", "http://engine.example", "tcp://engine.example/path", "tcp://a b", ""]) {
      expect(refusal(() => docker.check({ host }, {})).message, host).toMatch(/^fields\.host: /);
    }
    expect(refusal(() => docker.check({ host: "ssh://e.example", tls: true }, {})).message).toBe('unknown key "tls" in fields');
    expect(refusal(() => docker.check({}, {})).message).toMatch(/^fields\.host/);
  });

  it("a tcp:// engine needs all three TLS secrets; an ssh:// one takes only ssh_key", () => {
    expect(refusal(() => docker.check({ host: "tcp://e.example:2376" }, {})).message).toMatch(/missing ca, cert, key/);
    expect(refusal(() => docker.check({ host: "tcp://e.example:2376" }, { ssh_key: key })).message).toMatch(/secrets\.ssh_key/);
    expect(refusal(() => docker.check({ host: "ssh://e.example" }, { cert: "x" })).message).toMatch(/secrets\.cert: an ssh:\/\/ engine takes "ssh_key" only/);
    expect(refusal(() => docker.check({ host: "ssh://e.example" }, { token: "x" })).message).toMatch(/unknown key "token"/);
  });

  it("a value that is not a PEM is refused by its name, never quoted", () => {
    const secret = "-----BEGIN PRIVATE KEY-----\nthis-is-the-secret-value\n-----END PRIVATE KEY-----\n";
    const e = refusal(() => docker.check({ host: "ssh://e.example" }, { ssh_key: secret }));
    expect(e).toMatchObject({ code: "bad_request", message: "secrets.ssh_key: not a PEM private key" });
    expect(e.message).not.toContain("secret-value");
  });

  it("a launch on another engine is not built, and says so; another provider is unsupported, naming the providers", () => {
    expect(docker.notLaunchable({ host: "ssh://e.example" })).toMatch(/not built on this server yet/);
    expect(docker.can({}).launch).toBe(false);
    expect(refusal(() => provider("e2b"))).toMatchObject({ code: "unsupported", message: expect.stringContaining(`providers: ${[...PROVIDERS.keys()].join(", ")}`) });
  });
});
