// A Wayland screen's VNC port (5900+n), as x11vnc serves it on an X11 box: VNC authentication with
// the box's password (/etc/holm/vnc.passwd, which the server wrote), then the bytes go both ways
// to wayvnc's UNIX socket, which only root in the box can open and which asks for nothing. So the
// server's relay and the direct viewer sockets log in exactly as they do to x11vnc, and nothing
// in the box (a web page included) reaches the desktop without the password (ADR 0030).
import fs from "node:fs";
import net from "node:net";
import { randomBytes, timingSafeEqual } from "node:crypto";
import { VNC_PASSWD_PATH } from "../../../app/protocol/agent";
import { ByteReader, greetViewerWithPassword } from "../../../app/protocol/rfb/handshake";
import { passwordOfVncPasswdFile, vncChallengeResponse } from "../../../app/protocol/rfb/vnc-auth";
import { RfbClientFilter } from "../../../app/protocol/rfb/filter";
import { closeWayvnc, loginNone, readServerInit, waylandPaths } from "./wayland";
import type { AgentConfig } from "./config";

const HANDSHAKE_MS = 10_000;

/** Where a viewer put the pointer on screen `screen`. */
export type OnViewerPointer = (screen: number, x: number, y: number) => void;

function serveOne(viewer: net.Socket, vncPath: string, passwdFile: string, onPointer: (x: number, y: number) => void): void {
  viewer.setNoDelay(true);
  const fromViewer = new ByteReader();
  const onViewer = (c: Buffer) => fromViewer.push(c);
  viewer.on("data", onViewer);
  viewer.on("error", () => undefined);
  viewer.on("close", () => fromViewer.fail(new Error("the viewer left")));
  const timer = setTimeout(() => viewer.destroy(), HANDSHAKE_MS);
  void (async () => {
    let password: string;
    try {
      password = passwordOfVncPasswdFile(fs.readFileSync(passwdFile));
    } catch {
      // No password yet, no session: the box is still booting.
      viewer.destroy();
      return;
    }
    const challenge = randomBytes(16);
    const expected = vncChallengeResponse(password, challenge);
    try {
      await greetViewerWithPassword((n) => fromViewer.read(n), (b) => viewer.write(b), challenge, (r) => r.length === 16 && timingSafeEqual(r, expected));
    } catch {
      viewer.end();
      return;
    }
    const vnc = net.connect(vncPath);
    const fromVnc = new ByteReader();
    let greeted = false;
    const onVnc = (c: Buffer) => {
      greeted = true;
      fromVnc.push(c);
    };
    vnc.on("data", onVnc);
    vnc.on("error", (e) => fromVnc.fail(e));
    vnc.on("close", () => {
      fromVnc.fail(new Error("wayvnc closed"));
      viewer.destroy();
    });
    // Never a close before wayvnc's greeting (closeWayvnc says why).
    viewer.on("close", () => closeWayvnc(vnc, greeted));
    try {
      await loginNone((n) => fromVnc.read(n), (b) => vnc.write(b));
    } catch {
      closeWayvnc(vnc, greeted);
      viewer.destroy();
      return;
    }
    // Both sides are at ClientInit: from here the viewer's bytes are its own.
    viewer.off("data", onViewer);
    // The viewer's messages are framed on their way (they are few and small): where it puts the
    // pointer is the pointer's place, which wayvnc cannot be asked for. A message that cannot be
    // framed ends the connection, as at the server's relay.
    const filter = new RfbClientFilter({ mode: "control", greeted: true, onPointer });
    const toVnc = (c: Buffer): void => {
      const { out, close } = filter.push(c);
      if (out.length) vnc.write(out);
      if (close) {
        viewer.destroy();
        closeWayvnc(vnc, true);
      }
    };
    const early = fromViewer.rest();
    if (early.length) toVnc(early);
    viewer.on("data", toVnc);
    // wayvnc's ServerInit, answering the viewer's ClientInit, without a clipboard change that came
    // before it (readServerInit says why); from there on wayvnc's bytes are its own.
    let init: Buffer;
    try {
      init = await readServerInit((n) => fromVnc.read(n));
    } catch {
      closeWayvnc(vnc, greeted);
      viewer.destroy();
      return;
    }
    clearTimeout(timer);
    vnc.off("data", onVnc);
    viewer.write(Buffer.concat([init, fromVnc.rest()]));
    vnc.pipe(viewer);
  })();
}

/** One listener per screen on its VNC port; closed with the agent. */
export function serveVncFronts(config: AgentConfig, onPointer: OnViewerPointer): net.Server[] {
  return Array.from({ length: config.screens }, (_, i) => {
    const server = net.createServer((sock) =>
      serveOne(sock, waylandPaths(config.runtimeBase, i).vnc, process.env.HOLM_VNC_PASSWD_FILE || VNC_PASSWD_PATH, (x, y) => onPointer(i, x, y)),
    );
    server.on("error", (err) => process.stderr.write(`${JSON.stringify({ t: new Date().toISOString(), msg: "vnc front failed", screen: i, error: String(err) })}\n`));
    server.listen(config.vncPortBase + i, config.host);
    return server;
  });
}
