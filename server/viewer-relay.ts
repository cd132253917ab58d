import type { WebSocket } from "ws";
import type { Actor } from "~/models/actor";
import { vncPassword } from "~/models/agent.server";
import { getBox, touchBox } from "~/models/box.server";
import type { TicketClaims, ViewerMode } from "~/models/ticket.server";
import { registerViewer, reportViewerInput } from "~/models/viewer.server";
import { VIEWER_CLOSE } from "~/protocol/viewer-socket";
import { CONNECT_TIMEOUT_MS, type VncLink, pipeViewer } from "~/protocol/rfb/pipe";
import { loginToVnc } from "~/protocol/rfb/handshake";
import { vncChallengeResponse } from "~/protocol/rfb/vnc-auth";
import type { ViewerAccess } from "./viewer-access";
import { log } from "~/utils/log.server";

// The relay of the viewer socket (server/viewer-socket.ts accepts the upgrade, then hands the
// WebSocket here). Every viewer gets its own VNC connection, so a slow one never holds up the
// others or the agent. The bytes go through app/protocol/rfb/pipe.ts (the same pipe the box's
// direct viewer socket uses); this module ties it to the server: the box's VNC password, the
// registry of viewers (counts, revocation, takeover), input reported to the trace.

export { connectVnc, type VncLink } from "~/protocol/rfb/pipe";

const SERVER: Actor = { kind: "server" };

/**
 * Starts the login to VNC (it runs while the viewer upgrades and is greeted); none when VNC was
 * not reached. Awaited in relay() once the viewer is greeted.
 */
export function startVncLogin(vnc: VncLink, boxId: string): Promise<Buffer> | undefined {
  if (!vnc.reached) return undefined;
  const password = vncPassword(boxId);
  const login = loginToVnc(vnc.tcp, vnc.onData, (challenge) => vncChallengeResponse(password, challenge), CONNECT_TIMEOUT_MS);
  // Awaited once the viewer is greeted; a failure before that is not an unhandled rejection.
  login.catch(() => undefined);
  return login;
}

/** Relays an accepted viewer socket to VNC until either side ends (or access is revoked). */
export function relay(
  ws: WebSocket,
  vnc: VncLink,
  login: Promise<Buffer> | undefined,
  claims: TicketClaims,
  mode: ViewerMode,
  access: Pick<ViewerAccess & { ok: true }, "owner" | "sessionId" | "untilMs">,
) {
  const { box_id: boxId, screen, issuer } = claims;
  pipeViewer(ws, vnc, login, {
    mode,
    label: `box ${boxId} screen ${screen}`,
    onInput: (kind, detail) => {
      reportViewerInput({ boxId, screen, issuer, kind, detail: detail as Record<string, number> });
      void touchBox(boxId).catch(() => undefined);
    },
    register: (close) =>
      registerViewer({
        boxId,
        screen,
        mode,
        issuer,
        owner: access.owner,
        sessionId: access.sessionId,
        untilMs: access.untilMs,
        openedAtMs: Date.now(),
        close,
      }),
    whyVncClosed: () => whyVncClosed(boxId),
    onLoginError: (err) => log.error({ err }, `VNC login to ${boxId} screen ${screen} failed`),
    // One line a viewer connection, when it ends: who watched or drove which screen, how long, and why it ended.
    onEnd: (code, reason, ms) => log.info({ box: boxId, screen, mode, by: issuer, code, reason, s: Math.round(ms / 100) / 10 }, "viewer closed"),
  });
}

/** When VNC hangs up: was the box removed or stopped (the usual reason), or did VNC alone go? */
async function whyVncClosed(boxId: string): Promise<[number, string]> {
  try {
    const box = await getBox(SERVER, boxId);
    if (box.state === "ready") return [VIEWER_CLOSE.vncUnreachable, "the box's VNC server closed the connection"];
    return [VIEWER_CLOSE.notReady, `the box is ${box.state}`];
  } catch {
    return [VIEWER_CLOSE.noBox, "the box was removed"];
  }
}
