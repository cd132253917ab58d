// The two RFB handshakes of the viewer relay (RFC 6143 §7.1–7.3). Towards the box, the server
// logs in to x11vnc with VNC authentication and the box's password; towards the viewer it offers
// security type None, since the ticket already was the viewer's credential. Viewers (noVNC, the
// console) never see the password, and nothing in a box gets a session without it.
import type { Socket } from "node:net";

/** Bytes read by count, fed from a socket as they arrive. */
export class ByteReader {
  private chunks: Buffer[] = [];
  private avail = 0;
  private waiter: (() => void) | undefined;
  private error: Error | undefined;

  push(chunk: Buffer) {
    this.chunks.push(chunk);
    this.avail += chunk.length;
    this.wake();
  }

  fail(err: Error) {
    this.error ??= err;
    this.wake();
  }

  private wake() {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  async read(n: number): Promise<Buffer> {
    while (this.avail < n) {
      if (this.error) throw this.error;
      await new Promise<void>((r) => (this.waiter = r));
    }
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.avail = rest.length;
    return out;
  }

  /** What was read past the handshake, handed on to whoever reads next. */
  rest(): Buffer {
    const out = Buffer.concat(this.chunks);
    this.chunks = [];
    this.avail = 0;
    return out;
  }
}

export class VncLoginError extends Error {}

const SECURITY_NONE = 1;
const SECURITY_VNC_AUTH = 2;

async function reasonFrom(read: (n: number) => Promise<Buffer>): Promise<string> {
  const len = (await read(4)).readUInt32BE(0);
  return (await read(Math.min(len, 1024))).toString("utf8");
}

/**
 * Logs in to the box's VNC server: RFB 3.8 (3.7 if that is all it speaks), VNC authentication
 * answered with `respond(challenge)`. Resolves when the server waits for ClientInit. A server
 * that does not ask for VNC authentication is refused too: it would be open to the whole box.
 */
export async function vncLogin(
  read: (n: number) => Promise<Buffer>,
  write: (b: Buffer) => void,
  respond: (challenge: Buffer) => Buffer,
): Promise<void> {
  const version = (await read(12)).toString("latin1");
  const m = /^RFB 003\.(\d{3})\n$/.exec(version);
  if (!m) throw new VncLoginError(`the VNC server is not RFB 3.x (${JSON.stringify(version)})`);
  const minor = Number(m[1]);
  if (minor < 7) throw new VncLoginError(`the VNC server speaks RFB 3.${minor}; 3.7 or later is needed`);
  const v8 = minor >= 8;
  write(Buffer.from(v8 ? "RFB 003.008\n" : "RFB 003.007\n", "latin1"));
  const n = (await read(1))[0]!;
  if (n === 0) throw new VncLoginError(`the VNC server refused the connection: ${await reasonFrom(read)}`);
  const types = [...(await read(n))];
  if (!types.includes(SECURITY_VNC_AUTH)) {
    throw new VncLoginError(`the VNC server does not ask for a password (security types ${types.join(", ")})`);
  }
  write(Buffer.from([SECURITY_VNC_AUTH]));
  write(respond(await read(16)));
  const result = (await read(4)).readUInt32BE(0);
  if (result !== 0) {
    const why = v8 ? await reasonFrom(read).catch(() => "") : "";
    throw new VncLoginError(`the VNC server refused the box's password${why ? `: ${why}` : ""}`);
  }
}

/**
 * Logs in to x11vnc on `tcp` as soon as it answers (`onData` hands over its bytes until the
 * login is done). Resolves with whatever VNC sent past the handshake (normally nothing: it
 * waits for ClientInit).
 */
export function loginToVnc(
  tcp: Socket,
  onData: (fn: (chunk: Buffer) => void) => void,
  respond: (challenge: Buffer) => Buffer,
  timeoutMs: number,
): Promise<Buffer> {
  const reader = new ByteReader();
  onData((c) => reader.push(c));
  const closed = () => reader.fail(new VncLoginError("the VNC server closed the connection during the handshake"));
  tcp.once("close", closed);
  const timer = setTimeout(() => reader.fail(new VncLoginError("the VNC server did not finish the handshake in time")), timeoutMs);
  return vncLogin((n) => reader.read(n), (b) => tcp.write(b), respond)
    .then(() => reader.rest())
    .finally(() => {
      clearTimeout(timer);
      tcp.off("close", closed);
    });
}

export class ViewerGreetingError extends Error {
  constructor(
    message: string,
    /** `protocol`: the bytes are not RFB; `unsupported`: RFB, but not what the relay offers; `password`: a wrong one. */
    readonly kind: "protocol" | "unsupported" | "password",
  ) {
    super(message);
  }
}

/**
 * Sends the server's ProtocolVersion and reads the viewer's; offers `type` as the one security
 * type (3.3: the server picks it; 3.7 and 3.8: a list of one, which the viewer must choose).
 * Returns the minor version, as libvncserver reads it: 3.7 is 3.7, above is 3.8, below is 3.3.
 */
async function offerSecurity(read: (n: number) => Promise<Buffer>, write: (b: Buffer) => void, type: number, what: string): Promise<number> {
  write(Buffer.from("RFB 003.008\n", "latin1"));
  const version = (await read(12)).toString("latin1");
  const m = /^RFB (\d{3})\.(\d{3})\n$/.exec(version);
  if (!m) throw new ViewerGreetingError("the client did not send an RFB ProtocolVersion", "protocol");
  if (Number(m[1]) !== 3) throw new ViewerGreetingError(`RFB ${Number(m[1])}.x is not supported`, "unsupported");
  const minor = Number(m[2]);
  if (minor < 7) {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(type);
    write(b);
    return 3;
  }
  write(Buffer.from([1, type]));
  const chosen = (await read(1))[0]!;
  if (chosen !== type) throw new ViewerGreetingError(`security type ${chosen} is not offered; ${what}`, "unsupported");
  return minor >= 8 ? 8 : 7;
}

/**
 * Greets a viewer as a VNC server with security type None (RFB 3.3, 3.7 or 3.8, as it asks).
 * Resolves when the next byte from the viewer is its ClientInit.
 */
export async function greetViewer(read: (n: number) => Promise<Buffer>, write: (b: Buffer) => void): Promise<void> {
  const minor = await offerSecurity(read, write, SECURITY_NONE, "the relay offers None");
  // 3.3 and 3.7 send no SecurityResult for None; 3.8 does.
  if (minor === 8) write(Buffer.alloc(4));
}

/**
 * Greets a viewer as a VNC server that asks for a password (VNC authentication, RFC 6143
 * §7.2.2): a random challenge, whose answer `check` judges (in constant time). A wrong answer
 * gets SecurityResult failed (with the reason on 3.8), and the greeting throws (kind `password`).
 */
export async function greetViewerWithPassword(
  read: (n: number) => Promise<Buffer>,
  write: (b: Buffer) => void,
  challenge: Buffer,
  check: (response: Buffer) => boolean,
): Promise<void> {
  const minor = await offerSecurity(read, write, SECURITY_VNC_AUTH, "this socket asks for a password");
  write(challenge);
  const ok = check(await read(16));
  const result = Buffer.alloc(4);
  if (ok) return write(result);
  result.writeUInt32BE(1);
  const reason = Buffer.from("the password is wrong", "utf8");
  const len = Buffer.alloc(4);
  len.writeUInt32BE(reason.length);
  write(minor === 8 ? Buffer.concat([result, len, reason]) : result);
  throw new ViewerGreetingError("the viewer's password is wrong", "password");
}
