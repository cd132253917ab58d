// Request shapes: the action vocabulary is app/protocol/actions.ts, written once for the server
// and this agent (bundled in). The server checks every request first; the agent parses what it
// gets with the same strict schemas, so a field it does not know is refused (400), never dropped.
import type * as z from "zod";
import { WireStepSchema, type WireStep } from "../../../app/protocol/actions";

export {
  ArrangeSchema,
  BatchSchema,
  WireBatchSchema,
  CaptureSchema,
  ClipboardSetSchema,
  DEFAULT_AWAIT_WINDOW_MS,
  DEFAULT_EXEC_MS,
  DEFAULT_HOLD_MS,
  DEFAULT_SETTLE_MS,
  DEFAULT_STILL_WITHIN_MS,
  ExecWireSchema,
  MAX_EXEC_MS,
  MAX_HOLD_MS,
  URL_SCHEMES,
  BOX_STEPS,
  LATER_STEPS,
  changesScreen,
  type Arrange,
  type LaterStepType,
} from "../../../app/protocol/actions";

/** The agent's steps: the server's, with `launch` resolved to argv and no `apps`. */
export const StepSchema = WireStepSchema;
export type Step = WireStep;
export type StepType = Step["type"];
export type StepOf<T extends StepType> = Extract<Step, { type: T }>;

/** "actions[2].at.x: expected number" from a zod error. */
export function describeIssues(err: z.ZodError, prefix = ""): string {
  return err.issues
    .slice(0, 3)
    .map((i) => {
      const where = i.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("").replace(/^\./, "");
      const what = i.code === "unrecognized_keys" ? `unknown key ${i.keys.map((k) => `"${k}"`).join(", ")}` : i.message;
      return `${prefix}${where ? `${where}: ` : ""}${what}`;
    })
    .join("; ");
}
