import { createHash } from "node:crypto";
import net from "node:net";
import { PassThrough } from "node:stream";
import type Docker from "dockerode";
import { AGENT_PORT, VNC_PORT_BASE } from "~/protocol/agent";
import { FreezeGate, started } from "./freeze-gate.server";
import { log } from "~/utils/log.server";

// How the server reaches the ports of a box on another engine (ADR 0019). The box's bridge is on
// that host, not routable from here, and nothing new may listen there: so each TCP connection
// the server opens becomes one `docker exec` of a tiny forwarder inside the box, over the Docker
// API the server already holds (TLS client auth). Every caller keeps dialling `address:port`:
// the box gets a loopback address of its own here, where in-process listeners (bound to that
// address only) hand each accepted socket to a fresh tunnel. Behind them the agent still checks
// its HMAC signature and x11vnc its password, so no unauthenticated channel is added.

/** Ports a box serves the server on: the agent, and x11vnc of each of up to 8 screens. */
export const TUNNEL_PORTS: readonly number[] = [AGENT_PORT, ...Array.from({ length: 8 }, (_, n) => VNC_PORT_BASE + n)];

// bash's /dev/tcp, two cats and `wait -n`: the first side to finish ends the exec, and with it
// the stream. fd 4 is stdin named explicitly (a background job's stdin is /dev/null otherwise).
// It waits for one line first, so a tunnel can be opened ahead of need (a spare) and connect
// only when used: an x11vnc greeted early might give up on a client that says nothing. `read`
// takes bytes one at a time from a pipe, so nothing after that line is lost.
const FORWARDER =
  'IFS= read -r _ || exit 0; exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1; exec 4<&0; cat <&3 & a=$!; cat <&4 >&3 & b=$!; wait -n; kill $a $b 2>/dev/null; exit 0';

export interface Tunnel {
  /** The exec's stdin (the hijacked connection to the engine); ending it ends the tunnel's sending side. */
  input: net.Socket;
  /** What the box's port sends. */
  output: PassThrough;
  /** False once the exec's stream has ended (a spare whose box went away). */
  alive(): boolean;
  /** Connects to the port in the box (the line the forwarder waits for). */
  go(): void;
  close(): void;
}

/**
 * An exec in container `ref` that forwards to `127.0.0.1:port` there once `go()` is called. The
 * exec's stdout is demultiplexed (no TTY: the engine frames stdout and stderr).
 */
export async function openTunnel(docker: Docker, ref: string, port: number): Promise<Tunnel> {
  const exec = await docker.getContainer(ref).exec({
    Cmd: ["bash", "-c", FORWARDER, "holm-tunnel", String(port)],
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: false,
    Tty: false,
  });
  const input = (await exec.start({ hijack: true, stdin: true })) as unknown as net.Socket;
  const output = new PassThrough();
  let ended = false;
  const finish = () => {
    if (ended) return;
    ended = true;
    output.end();
  };
  // Listened to before anything else is awaited: an engine cut off while `started` waits times
  // this socket out (ETIMEDOUT), and an 'error' nobody listens to ends the whole server (a CI
  // run of swarm.test cut a node off at that moment).
  input.on("error", finish);
  input.once("end", finish);
  input.once("close", finish);
  // Its process running before the gate lets a pause in (freeze-gate.server.ts).
  await started(exec);
  input.setNoDelay?.(true);
  docker.modem.demuxStream(input, output, new PassThrough().resume());
  return { input, output, alive: () => !ended && !input.destroyed, go: () => void input.write("\n"), close: () => input.destroy() };
}

/** A loopback address of its own for a box, from its id: 127.A.B.C, A ≥ 16 (clear of 127.0.0.x). */
export function loopbackAddress(key: string): string {
  const h = createHash("sha256").update(key).digest();
  return `127.${16 + (h[0]! % 224)}.${h[1]!}.${1 + (h[2]! % 254)}`;
}

interface Forward {
  address: string;
  servers: net.Server[];
  sockets: Set<net.Socket>;
  /**
   * One tunnel opened ahead of need per port used so far (and the first screen's VNC port from
   * the start): a new viewer or DevTools client then skips the exec's set-up (two API calls).
   */
  spares: Map<number, Promise<Tunnel | undefined>>;
  closed: boolean;
}

/** The listeners of every box of one remote engine, by container ref. */
export class LoopbackForwards {
  private readonly boxes = new Map<string, Promise<Forward>>();

  constructor(
    private readonly docker: Docker,
    /** The runtime's: a tunnel's exec is never started while the box is being paused. */
    private readonly gate: FreezeGate = new FreezeGate(),
  ) {}

  /** Listens for the box (once) and answers its address; idempotent. */
  ensure(ref: string, key: string): Promise<string> {
    let f = this.boxes.get(ref);
    if (!f) {
      f = this.listen(ref, loopbackAddress(key));
      this.boxes.set(ref, f);
      f.catch(() => this.boxes.delete(ref));
    }
    return f.then((x) => x.address);
  }

  /** Closes the box's listeners and every connection through them. */
  async close(ref: string): Promise<void> {
    const f = this.boxes.get(ref);
    if (!f) return;
    this.boxes.delete(ref);
    const fw = await f.catch(() => undefined);
    if (!fw) return;
    fw.closed = true;
    for (const spare of fw.spares.values()) void spare.then((t) => t?.close());
    fw.spares.clear();
    for (const s of fw.sockets) s.destroy();
    await Promise.all(fw.servers.map((srv) => new Promise<void>((r) => srv.close(() => r()))));
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.boxes.keys()].map((ref) => this.close(ref)));
  }

  private async listen(ref: string, address: string): Promise<Forward> {
    const fw: Forward = { address, servers: [], sockets: new Set(), spares: new Map(), closed: false };
    try {
      for (const port of TUNNEL_PORTS) {
        const srv = net.createServer({ allowHalfOpen: true }, (sock) => this.pipe(ref, port, sock, fw));
        await new Promise<void>((resolve, reject) => {
          srv.once("error", reject);
          srv.listen(port, address, () => {
            srv.off("error", reject);
            resolve();
          });
        });
        fw.servers.push(srv);
      }
    } catch (err) {
      for (const srv of fw.servers) srv.close();
      throw err;
    }
    this.refill(ref, VNC_PORT_BASE, fw);
    return fw;
  }

  private refill(ref: string, port: number, fw: Forward): void {
    if (fw.closed) return;
    const spare = this.gate.exec(ref, () => openTunnel(this.docker, ref, port)).catch(() => undefined);
    fw.spares.set(port, spare);
    void spare.then((t) => {
      if (t && fw.closed) t.close();
    });
  }

  /** The spare for `port` if it is still good (and a new spare behind it), else a new tunnel. */
  private async take(ref: string, port: number, fw: Forward): Promise<Tunnel> {
    const spare = fw.spares.get(port);
    fw.spares.delete(port);
    this.refill(ref, port, fw);
    const t = await spare;
    if (t?.alive()) return t;
    t?.close();
    return this.gate.exec(ref, () => openTunnel(this.docker, ref, port));
  }

  private pipe(ref: string, port: number, sock: net.Socket, fw: Forward): void {
    fw.sockets.add(sock);
    sock.setNoDelay(true);
    sock.pause();
    let tunnel: Tunnel | undefined;
    sock.once("close", () => {
      fw.sockets.delete(sock);
      tunnel?.close();
    });
    sock.on("error", () => sock.destroy());
    this.take(ref, port, fw).then(
      (t) => {
        tunnel = t;
        if (sock.destroyed) return t.close();
        t.go();
        // Half-closes travel both ways: the client's end ends the exec's stdin, the box's end ours.
        sock.pipe(t.input);
        t.output.pipe(sock);
        t.input.on("error", () => sock.destroy());
        sock.resume();
      },
      (err) => {
        log.error(`tunnel to port ${port} of ${ref.slice(0, 12)}: ${(err as Error).message}`);
        sock.destroy();
      },
    );
  }
}
