import { createHash } from "node:crypto";
import http from "node:http";
import os from "node:os";
import type { Duplex } from "node:stream";
import Docker from "dockerode";
import ssh2 from "ssh2";

// The Docker API of an engine reached over ssh (`fields.host = ssh://[USER@]HOST[:PORT]`, ADR
// 0019). As the docker CLI does, every HTTP connection to the engine is `docker system dial-stdio`
// run on that host, its stdin and stdout the connection. Unlike the CLI (and docker-modem's own
// ssh agent, which dials a new SSH connection per HTTP request), the channels share long-lived
// SSH connections: a new connection costs a key exchange and an authentication, a channel one
// round trip and the remote `docker` process. OpenSSH allows 10 sessions per connection by
// default (MaxSessions), so a runtime holds a few connections, each with up to SESSIONS_PER_LINK
// channels, and opens another when they are full; one that drops is dialled again on next use.
// The host key is pinned (`fields.host_key`): any other key is refused before we authenticate.

/** How an ssh:// engine is reached: its address, the client key, and the pinned host key. */
export interface SshTarget {
  host: string;
  port: number;
  username: string;
  /** An OpenSSH or PEM private key (`secrets.ssh_key`), with its passphrase if it is encrypted. */
  privateKey: string;
  passphrase?: string;
  /** `fields.host_key` in normal form: `TYPE BASE64` or `SHA256:BASE64`. */
  hostKey: string;
  /**
   * The engine's socket on that host, to forward to (OpenSSH's direct-streamlocal) instead of
   * running `docker system dial-stdio` per connection.
   */
  socket?: string;
}

/** Below OpenSSH's default MaxSessions (10): a link opens no more channels than this. */
const SESSIONS_PER_LINK = 8;
/** A link with no channel for this long is closed (the next request dials again). */
const IDLE_MS = 60_000;
const DIAL = "docker system dial-stdio";
/** How long after the spare is taken another is opened. */
const REFILL_DELAY_MS = 300;

const HOST_KEY_TYPES = ["ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa"] as const;

/** The OpenSSH fingerprint of a public key blob: `SHA256:` and unpadded base64. */
export function fingerprint(blob: Buffer): string {
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}

/**
 * `fields.host_key` in normal form, or undefined when it is neither a public key (a line of
 * `ssh-keyscan HOST` or of the host's `ssh_host_*_key.pub`, the host name and comment dropped)
 * nor an OpenSSH SHA256 fingerprint (`ssh-keygen -lf …`).
 */
export function normalHostKey(value: string): string | undefined {
  const v = value.trim();
  const fp = /^SHA256:([A-Za-z0-9+/]{43})=?$/.exec(v);
  if (fp) return `SHA256:${fp[1]}`;
  const words = v.split(/\s+/);
  const at = words.findIndex((w) => (HOST_KEY_TYPES as readonly string[]).includes(w));
  if (at < 0 || !words[at + 1]) return undefined;
  const line = `${words[at]} ${words[at + 1]}`;
  const parsed = ssh2.utils.parseKey(line);
  if (parsed instanceof Error || parsed.type !== words[at]) return undefined;
  return line;
}

/** The fingerprint a pinned host key stands for. */
function pinnedFingerprint(hostKey: string): string {
  return hostKey.startsWith("SHA256:") ? hostKey : fingerprint(Buffer.from(hostKey.split(" ")[1]!, "base64"));
}

/** The host key algorithms to ask for: the pinned key's own, so the host shows that key. */
function hostKeyAlgorithms(hostKey: string): string[] | undefined {
  if (hostKey.startsWith("SHA256:")) return undefined;
  const type = hostKey.split(" ")[0]!;
  return type === "ssh-rsa" ? ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"] : [type];
}

/** Why a private key (and passphrase) cannot be used; undefined when it can. Never quotes the key. */
export function privateKeyProblem(key: string, passphrase?: string): string | undefined {
  const parsed = ssh2.utils.parseKey(key, passphrase);
  if (parsed instanceof Error) {
    if (/no passphrase given/.test(parsed.message)) return "secrets.ssh_key is encrypted: secrets.ssh_passphrase is needed";
    if (/passphrase|decrypt|integrity/i.test(parsed.message)) return "secrets.ssh_passphrase does not decrypt secrets.ssh_key";
    return "secrets.ssh_key: not a private key for ssh (OpenSSH, or PEM RSA/EC)";
  }
  if (!parsed.isPrivateKey()) return "secrets.ssh_key: a public key, not a private key";
  return undefined;
}

/** `ssh://[USER@]HOST[:PORT]` with the secrets and the pin: what a link dials. */
export function sshTarget(url: string, secrets: { ssh_key?: string; ssh_passphrase?: string }, hostKey: string): SshTarget {
  const u = new URL(url);
  return {
    host: u.hostname.replace(/^\[|\]$/g, ""),
    port: Number(u.port || 22),
    // As ssh does: the server's own user name when the URL names none.
    username: decodeURIComponent(u.username) || os.userInfo().username,
    privateKey: secrets.ssh_key ?? "",
    ...(secrets.ssh_passphrase ? { passphrase: secrets.ssh_passphrase } : {}),
    hostKey,
  };
}

interface Link {
  client: ssh2.Client;
  ready: Promise<void>;
  open: boolean;
  /** Channels open on it, and the most it may hold (lowered when the host refuses a session). */
  channels: number;
  limit: number;
  idle?: NodeJS.Timeout;
}

/**
 * An http.Agent for dockerode whose connections are `docker system dial-stdio` channels on
 * shared SSH connections to one host. Keep-alive: a finished request's channel serves the next.
 */
export class SshEngineAgent extends http.Agent {
  private readonly links = new Set<Link>();
  private closed = false;
  /**
   * One channel opened ahead of need: starting the remote `docker` process is most of a new
   * channel's cost (~100–400 ms here), and every exec tunnel's hijacked stream takes a channel
   * out of the keep-alive pool for good.
   */
  private spare: Promise<Duplex> | undefined;
  private refilling: NodeJS.Timeout | undefined;

  constructor(private readonly target: SshTarget) {
    super({ keepAlive: true, maxFreeSockets: 4 });
  }

  /** `user@host:port` for messages (no secret in it). */
  get where(): string {
    return `ssh://${this.target.username}@${this.target.host.includes(":") ? `[${this.target.host}]` : this.target.host}:${this.target.port}`;
  }

  override createConnection(_options: unknown, cb: (err: Error | null, socket?: Duplex) => void): undefined {
    const spare = this.spare;
    this.spare = undefined;
    const got = spare ? spare.then((ch) => (ch.destroyed ? this.channel() : ch), () => this.channel()) : this.channel();
    // Refilled after a success only: a host that refuses us is not dialled again unasked.
    got.then(() => this.refill(), () => undefined);
    got.then(
      (ch) => cb(null, ch),
      (err: Error) => cb(err),
    );
    return undefined;
  }

  private refill(): void {
    if (this.closed || this.spare || this.refilling) return;
    // Not at once: starting the remote `docker` process competes with the request that took
    // the spare (a viewer's first frame, on a busy host); a burst then shares one refill.
    this.refilling = setTimeout(() => {
      this.refilling = undefined;
      this.refillNow();
    }, REFILL_DELAY_MS);
    this.refilling.unref();
  }

  private refillNow(): void {
    if (this.closed || this.spare) return;
    const p = this.channel();
    this.spare = p;
    const drop = () => {
      if (this.spare === p) this.spare = undefined;
    };
    p.then((ch) => ch.once("close", drop), drop);
  }

  /** Ends every SSH connection (the runtime was changed or removed). */
  close(): void {
    this.closed = true;
    this.destroy();
    for (const link of this.links) link.client.end();
    this.links.clear();
  }

  private async channel(): Promise<Duplex> {
    if (this.closed) throw new Error(`${this.where}: the runtime was closed`);
    for (let attempt = 0; ; attempt++) {
      const link = this.pick() ?? this.dial();
      link.channels++;
      if (link.idle) clearTimeout(link.idle);
      try {
        await link.ready;
        return await this.exec(link);
      } catch (err) {
        this.release(link);
        // A host with a lower MaxSessions refuses a channel on a link that holds others: that
        // link is full at what it holds; the next try picks another or dials one.
        if (link.open && link.channels > 0 && attempt < 5 && /open failed|Channel open failure/i.test((err as Error).message)) {
          link.limit = link.channels;
          continue;
        }
        throw err;
      }
    }
  }

  private pick(): Link | undefined {
    for (const link of this.links) if (link.open && link.channels < link.limit) return link;
    return undefined;
  }

  private dial(): Link {
    const client = new ssh2.Client();
    const link: Link = { client, ready: Promise.resolve(), open: true, channels: 0, limit: SESSIONS_PER_LINK };
    this.links.add(link);
    const pin = pinnedFingerprint(this.target.hostKey);
    let seen: string | undefined;
    link.ready = new Promise<void>((resolve, reject) => {
      client.once("ready", () => resolve());
      client.on("error", (err: Error & { level?: string }) => {
        if (seen && seen !== pin) {
          reject(new Error(`${this.where}: the host's key (${seen}) is not the one pinned in fields.host_key (${pin}); refused before authenticating`));
        } else if (err.level === "client-authentication") {
          reject(new Error(`${this.where}: the host refused secrets.ssh_key (${err.message})`));
        } else {
          reject(new Error(`${this.where}: ${err.message}`));
        }
      });
      client.once("close", () => {
        link.open = false;
        this.links.delete(link);
        reject(new Error(`${this.where}: the connection closed`));
      });
    });
    link.ready.catch(() => undefined);
    client.connect({
      host: this.target.host,
      port: this.target.port,
      username: this.target.username,
      privateKey: this.target.privateKey,
      ...(this.target.passphrase ? { passphrase: this.target.passphrase } : {}),
      readyTimeout: 15_000,
      // A host that went away is noticed (and its link dropped) within ~45 s, not at TCP's pace.
      keepaliveInterval: 15_000,
      keepaliveCountMax: 3,
      ...(hostKeyAlgorithms(this.target.hostKey) ? { algorithms: { serverHostKey: hostKeyAlgorithms(this.target.hostKey) as never } } : {}),
      hostVerifier: (key: Buffer) => {
        seen = fingerprint(key);
        return seen === pin;
      },
    });
    // Requests and answers are small and wait on each other: Nagle's algorithm against the
    // peer's delayed ACK costs ~40 ms a round trip (seen here before this).
    client.setNoDelay(true);
    return link;
  }

  private exec(link: Link): Promise<Duplex> {
    const socket = this.target.socket;
    if (socket) {
      return new Promise((resolve, reject) => {
        link.client.openssh_forwardOutStreamLocal(socket, (err, ch) => {
          if (err) return reject(new Error(`${this.where}: forwarding to ${socket}: ${err.message}`));
          ch.once("close", () => this.release(link));
          resolve(socketLike(ch));
        });
      });
    }
    return new Promise((resolve, reject) => {
      link.client.exec(DIAL, (err, ch) => {
        if (err) return reject(err);
        let stderr = "";
        let answered = false;
        ch.stderr.on("data", (d: Buffer) => {
          if (stderr.length < 2000) stderr += d.toString("utf8");
        });
        ch.once("data", () => (answered = true));
        // A dial-stdio that fails before saying anything (no docker CLI, no engine behind it)
        // fails the request with its own words rather than "socket hang up".
        ch.once("exit", (code: number | null) => {
          if (code && !answered) (ch as unknown as Duplex).destroy(new Error(`${this.where}: \`${DIAL}\` exited ${code}: ${stderr.trim().slice(0, 500) || "no output"}`));
        });
        ch.once("close", () => this.release(link));
        resolve(socketLike(ch));
      });
    });
  }

  private release(link: Link): void {
    link.channels = Math.max(0, link.channels - 1);
    if (link.channels === 0 && link.open) {
      if (link.idle) clearTimeout(link.idle);
      link.idle = setTimeout(() => {
        if (link.channels === 0) link.client.end();
      }, IDLE_MS);
      link.idle.unref();
    }
  }
}

function noop(): void {}

/** What http's client and Agent call on a socket, on an SSH channel (as ssh2's own HTTP agent does). */
function socketLike(ch: ssh2.ClientChannel): Duplex {
  // A channel waiting as the spare or in the keep-alive pool has no listener of http's: an error
  // there (its dial-stdio failing) must not become an uncaught one. http adds its own on use.
  (ch as unknown as Duplex).on("error", noop);
  const s = ch as unknown as Record<string, unknown>;
  s.setKeepAlive = noop;
  s.setNoDelay = noop;
  s.setTimeout = noop;
  s.ref = noop;
  s.unref = noop;
  s.destroySoon = () => ch.destroy();
  return ch;
}

/** A dockerode client for an ssh:// engine, and its agent (to close its connections). */
export function sshClient(target: SshTarget): { docker: Docker; agent: SshEngineAgent } {
  const agent = new SshEngineAgent(target);
  // The host and port only name the pool's key and the Host header: the agent dials by itself.
  // docker-modem honours `agent` (it hands it to http.request); its typings leave it out.
  return { docker: new Docker({ protocol: "http", host: "docker", port: 80, agent } as Docker.DockerOptions), agent };
}
