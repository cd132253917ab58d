import { useEffect, useReducer, useRef } from "react";
import type { BoxJson } from "~/models/box.server";
import type { BoxStart } from "~/protocol/box-console";
import type { ForkReplay, ForkReplayPush } from "~/protocol/fork-replay";

// Follows forks live on socket.io /boxes: each fork's replay (`fork`, and `forks` as the socket
// connects) and each box's state (`box`, and `boxes` as it connects). The socket opens only once
// `enabled` (the first "Fork from here", or a page showing a fork whose replay runs), and what
// arrives is kept for every box, because a push can come before the page knows the new box's id
// (the fork's answer is still on its way). socket.io-client loads with the first use.

/** What the fork's panel shows of the new box. */
export type FollowedBox = Pick<BoxJson, "id" | "name" | "state" | "reason"> & { start?: BoxStart };

function boxOf(b: BoxJson): FollowedBox {
  return { id: b.id, name: b.name, state: b.state, reason: b.reason, start: b.start };
}

export interface Followed {
  box?: FollowedBox;
  replay?: ForkReplay;
}

export function useForkFollow(workspace: string, enabled: boolean) {
  const replays = useRef(new Map<string, ForkReplayPush>());
  const boxes = useRef(new Map<string, FollowedBox>());
  const [, bump] = useReducer((n: number) => n + 1, 0);
  const [live, setLive] = useReducer((_: boolean, v: boolean) => v, false);

  useEffect(() => {
    if (!enabled) return;
    let closed = false;
    let close = () => {};
    const keep = (p: ForkReplayPush) => {
      const had = replays.current.get(p.box_id);
      if (!had || had.v < p.v) replays.current.set(p.box_id, p);
    };
    void import("socket.io-client").then(({ io }) => {
      if (closed) return;
      const socket = io("/boxes", { transports: ["websocket"], auth: { workspace } });
      socket.on("connect", () => setLive(true));
      socket.on("disconnect", () => setLive(false));
      socket.on("forks", (list: ForkReplayPush[]) => {
        for (const p of list) keep(p);
        bump();
      });
      socket.on("fork", (p: ForkReplayPush) => {
        keep(p);
        bump();
      });
      socket.on("boxes", (list: BoxJson[]) => {
        for (const b of list) boxes.current.set(b.id, boxOf(b));
        bump();
      });
      socket.on("box", (b: BoxJson) => {
        boxes.current.set(b.id, boxOf(b));
        bump();
      });
      close = () => socket.close();
    });
    return () => {
      closed = true;
      close();
    };
  }, [workspace, enabled]);

  /** The newest the page knows of one fork: pushes over what the page had (`initial`). */
  const followed = (id: string, initial: Followed = {}): Followed => ({
    box: boxes.current.get(id) ?? initial.box,
    replay: replays.current.get(id)?.replay ?? initial.replay,
  });
  return { followed, live };
}
