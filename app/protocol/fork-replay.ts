// A fork's replay as it goes (issue 14): holm's `replay` on GET /v1/boxes/{id} of a fork, and
// the `fork` push on socket.io /boxes that the console's trace page follows. Shared by the
// server, the console and the client. The seed's fork answer ({box, replay: {attempted, ok,
// stopped_at, truncated, skipped}}) is unchanged; this adds `total` and `done`, and `reason`
// when the replay could not run to its end for a cause other than a step that ran and failed.

/** An entry of the trace that a fork does not do again, and why (seed 001). */
export interface ReplaySkip {
  seq: number;
  kind: string;
  why: string;
}

export interface ForkReplay {
  /** The steps the replay has to do (entries up to `up_to` that can be done again). */
  total: number;
  attempted: number;
  ok: number;
  /** False while the box starts and the steps run; true once the replay ended, however. */
  done: boolean;
  /** The seq of the step that failed and ended the replay, or null. */
  stopped_at: number | null;
  /** The replay hit its time limit (or was cut short, see `reason`) before its last step. */
  truncated: boolean;
  skipped: ReplaySkip[];
  /** Why the replay ended without running its steps to the end, other than a step that ran and failed (a refused batch says which step and why). */
  reason?: string;
}

/** Which box and entry a fork was made from (its `forked_from` entry). */
export interface ForkOrigin {
  box: string;
  up_to: number | null;
}

/** What socket.io /boxes pushes as `fork` (and, on connecting, the workspace's as `forks`). */
export interface ForkReplayPush {
  box_id: string;
  /** Grows with every change of any replay: the newest of two pushes for a box wins. */
  v: number;
  replay: ForkReplay;
}

/** The trace entry a fork's box records when its replay ends, with the report as its data. */
export const REPLAY_ENDED_EVENT = "replay_ended";
