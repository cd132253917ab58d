import type { Server as IoServer, Socket } from "socket.io";
import type { Actor } from "~/models/actor";
import { type BoxJson, boxChanges, getBox, openShell, touchBox } from "~/models/box.server";
import { recordEntry } from "~/models/trace.server";
import type { Shell } from "~/runtime/runtime";
import { ApiError, isApiError } from "~/utils/api-error.server";
import { requireSession } from "./socket-auth";
import { log } from "~/utils/log.server";
import { countSocket } from "~/utils/metrics.server";

// socket.io namespace /terminal: a shell with a TTY in one box, for the console's terminal.
// The handshake authenticates with the session cookie exactly like /boxes, needs the member role
// or higher in the workspace, and a box that workspace sees and that is running. One socket is
// one shell: bytes both ways (binary-safe), `resize` from the page, and whichever side ends first
// ends the other. The box's trace records that a session was opened and closed (by whom, for how
// long), never what was typed or shown.
//
// Client → server: auth {workspace, box, cols, rows}; "data" (string or bytes); "resize" {cols, rows}.
// Server → client: "data" (bytes); "exit" {code, why}.

const MAX_COLS = 1000;
const MAX_ROWS = 500;
/** Stop reading the shell while this many packets wait for the page; go on when they drain. */
const HIGH_WATER_PACKETS = 64;

function size(raw: unknown, fallback: { cols: number; rows: number }) {
  const r = (raw ?? {}) as { cols?: unknown; rows?: unknown };
  const clamp = (v: unknown, max: number, d: number) =>
    Number.isInteger(v) && (v as number) >= 1 ? Math.min(max, v as number) : d;
  return { cols: clamp(r.cols, MAX_COLS, fallback.cols), rows: clamp(r.rows, MAX_ROWS, fallback.rows) };
}

export function attachTerminal(io: IoServer) {
  const ns = io.of("/terminal");
  ns.use(
    requireSession("member", async (socket, actor) => {
      const box = await getBox(actor, String(socket.handshake.auth?.box ?? ""));
      if (box.state !== "ready") throw new ApiError("screen_unavailable", `the box is ${box.state}; the terminal needs a running box`);
      socket.data.boxId = box.id;
    }),
  );
  ns.on("connection", (socket) => {
    socket.once("disconnect", countSocket("terminal"));
    void serve(socket).catch((err) => {
      log.error({ err }, "terminal failed");
      socket.emit("exit", { code: null, why: "the terminal failed to start" });
      socket.disconnect(true);
    });
  });
}

/** Input kept while the shell starts: far more than a person types or pastes in that second. */
const EARLY_MAX = 1024 * 1024;
/**
 * Input waiting for the shell (written, not yet taken by the box's TTY) past which the terminal
 * ends. socket.io cannot pause one socket's reading (its transport reads for every namespace
 * and socket on the connection), so input that arrives while the shell is behind can only be
 * kept, dropped or refused. Kept without a limit, a page that floods a shell that reads
 * nothing grew the server by a gigabyte (security review); dropped, the shell would run what
 * is left of a paste, a cut command included. So it is refused: the terminal ends and says
 * why. A person's typing and pastes stay far below this while the shell reads at all.
 */
const INPUT_BEHIND_MAX = 4 * 1024 * 1024;

async function serve(socket: Socket) {
  const actor = socket.data.actor as Actor & { kind: "workspace" };
  const boxId = socket.data.boxId as string;
  const by = `user:${actor.userId}`;
  const { cols, rows } = size(socket.handshake.auth, { cols: 80, rows: 24 });
  // Input that arrives while the shell starts is kept and written once it runs.
  // At most EARLY_MAX of it: a page that floods a starting shell is cut off, not buffered.
  const early: Buffer[] = [];
  let earlyBytes = 0;
  let pendingSize: { cols: number; rows: number } | undefined;
  const toBytes = (d: unknown) =>
    typeof d === "string" ? Buffer.from(d, "utf8") : Buffer.isBuffer(d) ? d : d instanceof ArrayBuffer ? Buffer.from(d) : undefined;
  const onEarly = (d: unknown) => {
    const b = toBytes(d);
    if (!b || !socket.connected) return;
    earlyBytes += b.length;
    if (earlyBytes > EARLY_MAX) {
      early.length = 0;
      socket.emit("exit", { code: null, why: "too much input before the shell started" });
      socket.disconnect(true);
      return;
    }
    early.push(b);
  };
  const onEarlyResize = (r: unknown) => (pendingSize = size(r, { cols, rows }));
  socket.on("data", onEarly);
  socket.on("resize", onEarlyResize);

  let shell: Shell;
  try {
    shell = await openShell(actor, boxId, cols, rows);
  } catch (err) {
    socket.emit("exit", { code: null, why: isApiError(err) || err instanceof Error ? err.message : "the shell did not start" });
    socket.disconnect(true);
    return;
  }
  socket.off("data", onEarly);
  socket.off("resize", onEarlyResize);
  if (!socket.connected) {
    // The page left while the shell started.
    shell.close();
    return;
  }
  const openedAt = Date.now();
  await recordEntry(boxId, { actor: "person", event: "terminal", data: { by, phase: "opened" } }).catch((err) =>
    log.error({ err }, "trace terminal opened failed"),
  );

  let ended = false;
  const end = (code: number | null, why: string) => {
    if (ended) return;
    ended = true;
    boxChanges.off("change", onBox);
    shell.close();
    if (socket.connected) {
      socket.emit("exit", { code, why });
      socket.disconnect(true);
    }
    void recordEntry(boxId, {
      actor: "person",
      event: "terminal",
      data: { by, phase: "closed", duration_ms: Date.now() - openedAt },
    }).catch((err) => log.error({ err }, "trace terminal closed failed"));
  };

  // Shell → page, with back-pressure on the socket's write buffer.
  const conn = socket.conn as unknown as { writeBuffer?: unknown[]; on(ev: "drain", fn: () => void): void; off(ev: "drain", fn: () => void): void };
  let paused = false;
  const onDrain = () => {
    if (paused) {
      paused = false;
      shell.stream.resume();
    }
  };
  conn.on("drain", onDrain);
  shell.stream.on("data", (chunk: Buffer) => {
    socket.emit("data", chunk);
    if (!paused && (conn.writeBuffer?.length ?? 0) > HIGH_WATER_PACKETS) {
      paused = true;
      shell.stream.pause();
    }
  });
  shell.stream.on("error", () => undefined);
  void shell.exited.then((code) => end(code, code === null ? "the shell ended" : `the shell exited with ${code}`));

  // Page → shell.
  const write = (d: unknown) => {
    const b = toBytes(d);
    if (!b || ended) return;
    if (shell.stream.writableLength + b.length > INPUT_BEHIND_MAX) {
      log.warn({ box_id: boxId, by, behind: shell.stream.writableLength }, "terminal input the shell does not read; ending the terminal");
      return end(null, "too much input that the shell is not reading; the terminal was closed (open it again)");
    }
    shell.stream.write(b);
    void touchBox(boxId).catch(() => undefined);
  };
  for (const b of early) write(b);
  socket.on("data", write);
  const resize = (r: unknown) => {
    const s = size(r, { cols, rows });
    void shell.resize(s.cols, s.rows).catch(() => undefined);
  };
  if (pendingSize) resize(pendingSize);
  socket.on("resize", resize);
  socket.on("disconnect", () => {
    conn.off("drain", onDrain);
    end(null, "the page closed the terminal");
  });

  // A box that stops or goes away takes the session with it.
  const onBox = (box: BoxJson) => {
    if (box.id === boxId && box.state !== "ready") end(null, `the box is ${box.state}`);
  };
  boxChanges.on("change", onBox);
}
