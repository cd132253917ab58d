import { describe, expect, it } from "vitest";
import { vncChallengeResponse, vncPasswdFile, vncPasswordFrom } from "~/protocol/rfb/vnc-auth";
import { ByteReader, greetViewer, greetViewerWithPassword, vncLogin } from "../../app/protocol/rfb/handshake";

// The relay's two RFB handshakes, spoken against scripted peers, and the VNC password crypto.
// That x11vnc itself takes the relay's login is proven against real boxes (viewer.test.ts,
// security-box.test.ts).

/** A peer that answers `script`: each step waits for `expect` bytes, then sends `send`. */
function scripted(steps: { expect?: number; send?: Buffer }[]) {
  const reader = new ByteReader();
  const received: Buffer[] = [];
  let pending = Buffer.alloc(0);
  let i = 0;
  const advance = () => {
    while (i < steps.length) {
      const s = steps[i]!;
      if (s.expect && pending.length < s.expect) return;
      if (s.expect) {
        received.push(pending.subarray(0, s.expect));
        pending = pending.subarray(s.expect);
      }
      if (s.send) reader.push(s.send);
      i++;
    }
  };
  const write = (b: Buffer) => {
    pending = Buffer.concat([pending, b]);
    advance();
  };
  advance();
  return { read: (n: number) => reader.read(n), write, received, reader };
}

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const reason = (text: string) => Buffer.concat([u32(Buffer.byteLength(text)), Buffer.from(text)]);

describe("VNC password crypto", () => {
  it("writes the password file x11vnc -storepasswd writes", () => {
    // `x11vnc -storepasswd 'Ab3$x~!q' FILE` on Debian bookworm wrote these 8 bytes.
    expect(vncPasswdFile("Ab3$x~!q").toString("hex")).toBe("d15fd1e7cd3e7046");
  });

  it("answers a challenge with DES of each half under the bit-reversed password", () => {
    const challenge = Buffer.from("00112233445566778899aabbccddeeff", "hex");
    const a = vncChallengeResponse("secret12", challenge);
    expect(a).toHaveLength(16);
    // ECB: equal halves give equal answers; another password another answer.
    const same = vncChallengeResponse("secret12", Buffer.concat([challenge.subarray(0, 8), challenge.subarray(0, 8)]));
    expect(same.subarray(0, 8)).toEqual(same.subarray(8));
    expect(vncChallengeResponse("secret13", challenge)).not.toEqual(a);
    // Only 8 characters count, as in VNC.
    expect(vncChallengeResponse("secret12-and-more", challenge)).toEqual(a);
  });

  it("makes 8 printable characters with no zero byte from a secret", () => {
    const pw = vncPasswordFrom(Buffer.alloc(32, 0xff));
    expect(pw).toMatch(/^[!-~]{8}$/);
    expect(vncPasswordFrom(Buffer.alloc(32, 0))).toBe("!!!!!!!!");
  });
});

describe("logging in to the box's VNC server", () => {
  const challenge = Buffer.alloc(16, 7);
  const respond = (c: Buffer) => vncChallengeResponse("pw", c);

  it("speaks 3.8 and answers VNC authentication", async () => {
    const peer = scripted([
      { send: Buffer.from("RFB 003.008\n") },
      { expect: 12, send: Buffer.from([2, 16, 2]) },
      { expect: 1, send: challenge },
      { expect: 16, send: u32(0) },
    ]);
    await vncLogin(peer.read, peer.write, respond);
    expect(peer.received[0]!.toString()).toBe("RFB 003.008\n");
    expect(peer.received[1]).toEqual(Buffer.from([2]));
    expect(peer.received[2]).toEqual(respond(challenge));
    expect(peer.reader.rest()).toHaveLength(0);
  });

  it("refuses a server that offers no VNC authentication (it would be open to the box)", async () => {
    const peer = scripted([{ send: Buffer.from("RFB 003.008\n") }, { expect: 12, send: Buffer.from([1, 1]) }]);
    await expect(vncLogin(peer.read, peer.write, respond)).rejects.toThrow(/does not ask for a password/);
  });

  it("reports a refused password with the server's reason, and a refused connection", async () => {
    const wrong = scripted([
      { send: Buffer.from("RFB 003.008\n") },
      { expect: 12, send: Buffer.from([1, 2]) },
      { expect: 1, send: challenge },
      { expect: 16, send: Buffer.concat([u32(1), reason("password check failed!")]) },
    ]);
    await expect(vncLogin(wrong.read, wrong.write, respond)).rejects.toThrow(/refused the box's password: password check failed/);
    const busy = scripted([{ send: Buffer.from("RFB 003.008\n") }, { expect: 12, send: Buffer.concat([Buffer.from([0]), reason("too many")]) }]);
    await expect(vncLogin(busy.read, busy.write, respond)).rejects.toThrow(/refused the connection: too many/);
  });

  it("refuses what is not RFB 3.7 or later", async () => {
    for (const v of ["HTTP/1.1 400", "RFB 003.003\n"]) {
      const peer = scripted([{ send: Buffer.from(v.padEnd(12, " ")) }]);
      await expect(vncLogin(peer.read, peer.write, respond)).rejects.toThrow(/RFB/);
    }
  });
});

describe("greeting a viewer", () => {
  it("offers None to 3.8 and sends the security result", async () => {
    const out: Buffer[] = [];
    const r = new ByteReader();
    const done = greetViewer((n) => r.read(n), (b) => out.push(b));
    r.push(Buffer.from("RFB 003.008\n"));
    r.push(Buffer.from([1, 1])); // the choice, then ClientInit
    await done;
    expect(Buffer.concat(out)).toEqual(Buffer.concat([Buffer.from("RFB 003.008\n"), Buffer.from([1, 1]), u32(0)]));
    expect(r.rest()).toEqual(Buffer.from([1]));
  });

  it("sends 3.7 no security result, and 3.3 the type as a u32", async () => {
    for (const [version, expected] of [
      ["RFB 003.007\n", Buffer.from([1, 1])],
      ["RFB 003.003\n", u32(1)],
    ] as const) {
      const out: Buffer[] = [];
      const r = new ByteReader();
      const done = greetViewer((n) => r.read(n), (b) => out.push(b));
      r.push(Buffer.from(version));
      if (version.includes("007")) r.push(Buffer.from([1]));
      await done;
      expect(Buffer.concat(out).subarray(12)).toEqual(expected);
    }
  });

  it("refuses a viewer that picks VNC authentication or does not speak RFB", async () => {
    const r = new ByteReader();
    const done = greetViewer((n) => r.read(n), () => undefined);
    r.push(Buffer.from("RFB 003.008\n"));
    r.push(Buffer.from([2]));
    await expect(done).rejects.toMatchObject({ kind: "unsupported" });
    const r2 = new ByteReader();
    const done2 = greetViewer((n) => r2.read(n), () => undefined);
    r2.push(Buffer.from("GET / HTTP/1.1\r\n"));
    await expect(done2).rejects.toMatchObject({ kind: "protocol" });
  });

  it("with a password: offers VNC authentication only, takes the right answer, refuses a wrong one with a reason", async () => {
    const challenge = Buffer.alloc(16, 7);
    const right = vncChallengeResponse("pw123456", challenge);
    const greet = (answer: Buffer, version = "RFB 003.008\n") => {
      const out: Buffer[] = [];
      const r = new ByteReader();
      const done = greetViewerWithPassword((n) => r.read(n), (b) => out.push(b), challenge, (a) => a.equals(right));
      r.push(Buffer.from(version));
      if (!version.includes("003.003")) r.push(Buffer.from([2]));
      r.push(answer);
      return { done, out };
    };
    const ok = greet(right);
    await ok.done;
    expect(Buffer.concat(ok.out)).toEqual(Buffer.concat([Buffer.from("RFB 003.008\n"), Buffer.from([1, 2]), challenge, u32(0)]));
    const bad = greet(Buffer.alloc(16));
    await expect(bad.done).rejects.toMatchObject({ kind: "password" });
    expect(Buffer.concat(bad.out).subarray(12 + 2 + 16, 12 + 2 + 16 + 4)).toEqual(u32(1));
    expect(Buffer.concat(bad.out).toString("latin1")).toContain("the password is wrong");
    const old = greet(right, "RFB 003.003\n");
    await old.done;
    expect(Buffer.concat(old.out).subarray(12)).toEqual(Buffer.concat([u32(2), challenge, u32(0)]));
    const none = new ByteReader();
    const picked = greetViewerWithPassword((n) => none.read(n), () => undefined, challenge, () => true);
    none.push(Buffer.from("RFB 003.008\n"));
    none.push(Buffer.from([1]));
    await expect(picked).rejects.toMatchObject({ kind: "unsupported" });
  });
});
