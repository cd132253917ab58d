// Sway's IPC socket (the i3 protocol): the Wayland screen asks it for windows and sends it
// commands (wayland.ts), and waits on a round trip with it for input to have been taken in.
import net from "node:net";
import { ByteReader } from "../../../app/protocol/rfb/handshake";
import { AgentError } from "./errors";

/** Sway's IPC (the i3 protocol): "i3-ipc", length and type (little-endian u32), JSON. */
export class SwayIpc {
  private readonly reader = new ByteReader();
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(private readonly sock: net.Socket) {
    sock.on("data", (c: Buffer) => this.reader.push(c));
    sock.on("error", (e) => this.reader.fail(e));
    sock.on("close", () => this.reader.fail(new Error("sway's IPC socket closed")));
  }

  static connect(socketPath: string, timeoutMs: number): Promise<SwayIpc> {
    return new Promise((resolve, reject) => {
      const sock = net.connect(socketPath);
      const timer = setTimeout(() => {
        sock.destroy();
        reject(new Error(`sway's IPC socket did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      sock.once("connect", () => {
        clearTimeout(timer);
        resolve(new SwayIpc(sock));
      });
      sock.once("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
  }

  get closed(): boolean {
    return this.sock.destroyed;
  }

  close(): void {
    this.sock.destroy();
  }

  /** One request and its answer; requests queue, since answers come in order. */
  request<T>(type: number, payload = ""): Promise<T> {
    const run = async (): Promise<T> => {
      const body = Buffer.from(payload, "utf8");
      const head = Buffer.alloc(14);
      head.write("i3-ipc", 0, "latin1");
      head.writeUInt32LE(body.length, 6);
      head.writeUInt32LE(type, 10);
      this.sock.write(Buffer.concat([head, body]));
      const h = await this.reader.read(14);
      const len = h.readUInt32LE(6);
      return JSON.parse((await this.reader.read(len)).toString("utf8")) as T;
    };
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** RUN_COMMAND: one command; throws with sway's reason when it fails. */
  async command(cmd: string): Promise<void> {
    const out = await this.request<{ success: boolean; error?: string }[]>(0, cmd);
    const bad = out.find((r) => !r.success);
    if (bad) throw new AgentError("failed", `sway: ${bad.error ?? "the command failed"}`);
  }
}

export const IPC_GET_TREE = 4;
export const IPC_GET_VERSION = 7;
