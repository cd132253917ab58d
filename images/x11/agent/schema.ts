// Request shapes. The server validates first; these catch what slips through (or a caller that
// is not the server) and answer 400 instead of throwing deep inside a step. Unknown keys are
// dropped, not refused, so the server may add fields before the agent knows them.
import * as z from "zod";
import { MAX_EXEC_MS } from "./exec";

const int = () => z.number().int();
const ms30 = () => int().min(0).max(30_000);
export const PointSchema = z.object({ x: z.number().finite(), y: z.number().finite() });
const Button = z.enum(["left", "right", "middle"]);
const Held = z.array(z.enum(["shift", "ctrl", "alt", "super"])).max(4);
const Motion = z.enum(["instant", "smooth", "human"]);
const Seed = int().min(0).max(0xffffffff);
const HoldMs = int().min(0).max(60_000);
const Chord = z.string().min(1).max(200);
const Chords = z.union([Chord, z.array(Chord).min(1).max(100)]);
export const RectSchema = z.object({ x: int(), y: int(), width: int().min(1), height: int().min(1) });
export const WindowRef = z.union([z.string().min(1).max(200), int().min(0)]);

export const CaptureWhat = z.object({
  window: WindowRef.optional(),
  region: RectSchema.optional(),
  scale: z.number().min(1).max(400).optional(),
  pointer: z.boolean().optional(),
});

export const ArrangeSchema = z.discriminatedUnion("how", [
  z.object({ how: z.literal("at"), to: z.object({ x: int(), y: int() }) }),
  z.object({ how: z.literal("size"), width: int().min(1).max(16_384), height: int().min(1).max(16_384) }),
  z.object({ how: z.literal("maximise") }),
  z.object({ how: z.literal("minimise") }),
  z.object({ how: z.literal("restore") }),
]);

export const ExecWhat = z.object({
  argv: z.array(z.string().max(1_000_000)).min(1).max(10_000),
  timeout_ms: int().min(1).max(MAX_EXEC_MS).optional(),
  cwd: z.string().min(1).optional(),
  env: z.record(z.string(), z.string()).optional(),
  stdin: z.string().optional(),
});

export const GrepWhat = z.object({
  pattern: z.string().min(1).max(10_000),
  path: z.string().min(1).optional(),
  include: z.string().min(1).optional(),
  ignore_case: z.boolean().optional(),
  limit: int().min(1).max(10_000).optional(),
});

export const GlobWhat = z.object({
  pattern: z.string().min(1).max(10_000),
  path: z.string().min(1).optional(),
  limit: int().min(1).max(100_000).optional(),
});

export const WriteWhat = z.object({ path: z.string().min(1), contents_base64: z.string() });
export const Selection = z.enum(["clipboard", "primary"]);
export const App = z.union([z.string().min(1), z.object({ argv: z.array(z.string()).min(1) })]);

/** What open_url may open: pages, not `javascript:`, `chrome:` or `view-source:`. */
export const URL_SCHEMES = ["http:", "https:", "about:", "data:", "file:"];
const PageUrl = z
  .string()
  .min(1)
  .max(2_000_000)
  .refine((u) => {
    try {
      return URL_SCHEMES.includes(new URL(u).protocol);
    } catch {
      return false;
    }
  }, `must be an absolute ${URL_SCHEMES.map((x) => x.slice(0, -1)).join(", ")} URL`);
export const TabRef = z.string().min(1).max(200);

export const StepSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("move"), to: PointSchema, motion: Motion.optional(), seed: Seed.optional(), pause_ms: ms30().optional() }),
  z.object({ type: z.literal("click"), at: PointSchema.optional(), button: Button.optional(), held: Held.optional(), motion: Motion.optional(), seed: Seed.optional() }),
  z.object({ type: z.literal("double_click"), at: PointSchema.optional(), button: Button.optional(), held: Held.optional(), motion: Motion.optional(), seed: Seed.optional() }),
  z.object({ type: z.literal("drag"), from: PointSchema.optional(), to: PointSchema, button: Button.optional(), held: Held.optional(), motion: Motion.optional(), seed: Seed.optional() }),
  z.object({ type: z.literal("path"), through: z.array(PointSchema).min(1).max(2000), button: Button.optional(), held: Held.optional(), motion: Motion.optional(), seed: Seed.optional() }),
  z.object({ type: z.literal("mouse_down"), at: PointSchema.optional(), button: Button.optional(), motion: Motion.optional(), seed: Seed.optional(), hold_ms: HoldMs.optional() }),
  z.object({ type: z.literal("mouse_up"), at: PointSchema.optional(), button: Button.optional() }),
  z.object({ type: z.literal("scroll"), at: PointSchema.optional(), dx: int().min(-200).max(200).optional(), dy: int().min(-200).max(200).optional() }),
  z.object({ type: z.literal("type"), text: z.string().max(200_000), delay_ms: int().min(0).max(1000).optional() }),
  z.object({ type: z.literal("press"), chord: Chords, then: Chords.optional(), held: Held.optional() }),
  z.object({ type: z.literal("key_down"), key: Chord, hold_ms: HoldMs.optional() }),
  z.object({ type: z.literal("key_up"), key: Chord }),
  z.object({ type: z.literal("wait"), ms: ms30() }),
  z.object({ type: z.literal("wait_still"), settle_ms: ms30().optional(), within_ms: ms30().optional() }),
  z.object({ type: z.literal("await_window"), what: z.object({ class: z.string().min(1), within_ms: int().min(0).max(120_000).optional() }) }),
  z.object({ type: z.literal("capture"), what: CaptureWhat.optional() }),
  z.object({ type: z.literal("cursor") }),
  z.object({ type: z.literal("windows"), active: z.boolean().optional() }),
  z.object({
    type: z.literal("on_window"),
    window: WindowRef,
    what: z.discriminatedUnion("do", [
      z.object({ do: z.literal("focus") }),
      z.object({ do: z.literal("close") }),
      z.object({ do: z.literal("arrange"), how: ArrangeSchema }),
    ]),
  }),
  z.object({ type: z.literal("launch"), app: App, args: z.array(z.string()).max(1000).optional() }),
  z.object({ type: z.literal("clipboard"), selection: Selection.optional(), text: z.string().max(10_000_000).optional() }),
  z.object({
    type: z.literal("record"),
    what: z.discriminatedUnion("do", [
      z.object({ do: z.literal("start"), fps: int().min(1).max(60).optional() }),
      z.object({ do: z.literal("stop") }),
      z.object({ do: z.literal("status") }),
    ]),
  }),
  z.object({ type: z.literal("exec"), what: ExecWhat }),
  z.object({ type: z.literal("read_file"), path: z.string().min(1) }),
  z.object({ type: z.literal("write_file"), what: WriteWhat }),
  z.object({ type: z.literal("list_files"), path: z.string().min(1) }),
  z.object({ type: z.literal("grep"), what: GrepWhat }),
  z.object({ type: z.literal("glob"), what: GlobWhat }),
  z.object({ type: z.literal("open_url"), url: PageUrl, target: z.enum(["blank", "current"]).optional(), label: TabRef.optional() }),
  z.object({ type: z.literal("tabs") }),
  z.object({ type: z.literal("on_tab"), tab: TabRef, close: z.boolean().optional() }),
]);

export type Step = z.infer<typeof StepSchema>;
export type StepType = Step["type"];
export type StepOf<T extends StepType> = Extract<Step, { type: T }>;

export const BatchSchema = z.object({
  actions: z.array(z.unknown()).max(1000),
  want: z.array(z.enum(["frame", "cursor"])).optional(),
  settle_ms: ms30().optional(),
  have_frame: z.string().max(200).optional(),
  keep_going: z.boolean().optional(),
  /** Options for the final frame (not in the public API: the server may pass `scale` or `pointer`). */
  frame_options: CaptureWhat.optional(),
});

export const ClipboardPut = z.object({ text: z.string().max(10_000_000), selection: Selection.optional() });

/** "actions[2].at.x: expected number" from a zod error. */
export function describeIssues(err: z.ZodError, prefix = ""): string {
  return err.issues
    .slice(0, 3)
    .map((i) => {
      const where = i.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("").replace(/^\./, "");
      return `${prefix}${where ? `${where}: ` : ""}${i.message}`;
    })
    .join("; ");
}
