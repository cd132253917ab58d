// What a box's JSON carries for people (issue 14), beside the seed's fields: its name and labels,
// who created it, and how its start went. Shared by the server, the console and the client.

/** The phases of a box's start, in the order they happen. */
export const START_PHASES = ["queued", "image", "container", "x", "vnc", "browser", "agent"] as const;
export type StartPhase = (typeof START_PHASES)[number];

/**
 * A box's start: where it is (or stopped), since when each phase, and the end of its log.
 * Phases: `queued` waits for a start slot, `image` finds or builds the image, `container`
 * creates and starts it, then `x`, `vnc` and `browser` wait for that part to answer on every
 * screen, and `agent` for the in-box agent to report everything up with its secret in place.
 */
export interface BoxStart {
  /** The phase it is in now; `ready` once it answers, `failed` when it did not start. */
  phase: StartPhase | "ready" | "failed";
  /** When each phase began (epoch ms), in order; a phase passed between two looks begins when the next does. */
  phases: { name: StartPhase; at_ms: number }[];
  /** While the image builds: the step of how many (0 of 0 before the first step), and its latest line. */
  build?: { step: number; total: number; line: string };
  /** The last lines of the start's log (image build, container output); kept for a failed box. */
  log: string[];
  /** When the start ended (ready or failed). */
  ended_ms?: number;
  /** For a failed start: the phase it failed in. */
  failed_in?: StartPhase;
}

/** How many lines of a start's log are kept. */
export const START_LOG_LINES = 40;

/** Who made something, by the name it had then. */
export interface CreatedBy {
  kind: "person" | "key" | "server";
  /** `user:<id>`, `key:<id>` or `server`. */
  id: string;
  name: string;
}

/** Limits of a box's name and labels (the console and PATCH /v1/boxes/{id} alike). */
export const BOX_NAME_MAX = 80;
export const BOX_LABELS_MAX = 16;
export const BOX_LABEL_KEY = /^[a-z0-9][a-z0-9._/-]{0,62}$/;
export const BOX_LABEL_VALUE_MAX = 128;
