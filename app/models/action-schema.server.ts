import { z } from "zod";

// The action vocabulary of `000` ("Actions"), validated at the edge. The agent in the box runs
// what passes; anything unknown is refused here naming the step.

const Coord = z.number().int().min(0).max(16_384);
export const PointSchema = z.strictObject({ x: Coord, y: Coord });
const Button = z.enum(["left", "right", "middle"]);
const Held = z.array(z.enum(["shift", "ctrl", "alt", "super"])).max(4);
const Motion = z.enum(["instant", "smooth", "human"]);
const Seed = z.number().int().min(0).max(2 ** 32 - 1);
const HoldMs = z.number().int().min(1).max(60_000);
const Ms30 = z.number().int().min(0).max(30_000);
const Selection = z.enum(["clipboard", "primary"]);
const Chord = z.string().min(1).max(200);
const Path = z.string().min(1).max(4096);

export const RegionSchema = z.strictObject({
  x: Coord,
  y: Coord,
  width: z.number().int().min(1).max(16_384),
  height: z.number().int().min(1).max(16_384),
});

export const CaptureSchema = z.strictObject({
  window: z.string().max(64).optional(),
  region: RegionSchema.optional(),
  scale: z.number().int().min(1).max(400).optional(),
  pointer: z.boolean().optional(),
  tab: z.string().optional(),
});

export const ArrangeSchema = z.discriminatedUnion("how", [
  z.strictObject({ how: z.literal("at"), to: PointSchema }),
  z.strictObject({
    how: z.literal("size"),
    width: z.number().int().min(1).max(16_384),
    height: z.number().int().min(1).max(16_384),
  }),
  z.strictObject({ how: z.literal("maximise") }),
  z.strictObject({ how: z.literal("minimise") }),
  z.strictObject({ how: z.literal("restore") }),
]);

export const ExecSchema = z.strictObject({
  argv: z.array(z.string().max(64 * 1024)).min(1).max(1024),
  timeout_ms: z.number().int().min(1).max(600_000).optional(),
});

export const WriteFileSchema = z.strictObject({ path: Path, contents_base64: z.base64() });

export const GrepSchema = z.strictObject({
  pattern: z.string().min(1).max(1000),
  path: Path.optional(),
  include: z.string().max(200).optional(),
  ignore_case: z.boolean().optional(),
  limit: z.number().int().min(1).max(10_000).optional(),
});

export const GlobSchema = z.strictObject({
  pattern: z.string().min(1).max(1000),
  path: Path.optional(),
  limit: z.number().int().min(1).max(10_000).optional(),
});

export const WaitWindowSchema = z.strictObject({
  class: z.string().min(1).max(200),
  within_ms: Ms30.optional(),
});

const pointer = { motion: Motion.optional(), seed: Seed.optional() };

/** Steps a later issue implements (pages by element, native widgets): refused as `unsupported`. */
export const LATER_STEPS = ["on_page", "look", "snapshot", "read", "evaluate", "page_shot", "dialog", "on_node"] as const;

export const StepSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("move"), to: PointSchema, ...pointer, pause_ms: Ms30.optional() }),
  z.strictObject({ type: z.literal("click"), at: PointSchema.optional(), button: Button.optional(), held: Held.optional(), ...pointer }),
  z.strictObject({ type: z.literal("double_click"), at: PointSchema.optional(), button: Button.optional(), ...pointer }),
  z.strictObject({ type: z.literal("drag"), from: PointSchema, to: PointSchema, button: Button.optional(), held: Held.optional(), ...pointer }),
  z.strictObject({
    type: z.literal("path"),
    through: z.array(PointSchema).min(2).max(1000),
    button: Button.optional(),
    held: Held.optional(),
    ...pointer,
  }),
  z.strictObject({ type: z.literal("mouse_down"), at: PointSchema.optional(), button: Button.optional(), ...pointer, hold_ms: HoldMs.optional() }),
  z.strictObject({ type: z.literal("mouse_up"), at: PointSchema.optional(), button: Button.optional() }),
  z.strictObject({
    type: z.literal("scroll"),
    at: PointSchema.optional(),
    dx: z.number().int().min(-100).max(100).optional(),
    dy: z.number().int().min(-100).max(100).optional(),
  }),
  z.strictObject({ type: z.literal("type"), text: z.string().max(100_000), delay_ms: z.number().int().min(0).max(1000).optional() }),
  z.strictObject({
    type: z.literal("press"),
    chord: z.union([Chord, z.array(Chord).min(1).max(50)]),
    then: z.union([Chord, z.array(Chord).max(50)]).optional(),
    held: Held.optional(),
  }),
  z.strictObject({ type: z.literal("key_down"), key: Chord, hold_ms: HoldMs.optional() }),
  z.strictObject({ type: z.literal("key_up"), key: Chord }),
  z.strictObject({ type: z.literal("wait"), ms: Ms30 }),
  z.strictObject({ type: z.literal("wait_still"), settle_ms: Ms30.optional(), within_ms: Ms30.optional() }),
  z.strictObject({ type: z.literal("await_window"), what: WaitWindowSchema }),
  z.strictObject({ type: z.literal("capture"), what: CaptureSchema.optional() }),
  z.strictObject({ type: z.literal("cursor") }),
  z.strictObject({ type: z.literal("windows"), active: z.boolean().optional() }),
  z.strictObject({
    type: z.literal("on_window"),
    window: z.string().min(1).max(64),
    what: z.discriminatedUnion("do", [
      z.strictObject({ do: z.literal("focus") }),
      z.strictObject({ do: z.literal("close") }),
      z.strictObject({ do: z.literal("arrange"), how: ArrangeSchema }),
    ]),
  }),
  z.strictObject({ type: z.literal("launch"), app: z.string().min(1).max(64), args: z.array(z.string().max(4096)).max(64).optional() }),
  z.strictObject({ type: z.literal("apps") }),
  z.strictObject({
    type: z.literal("record"),
    what: z.discriminatedUnion("do", [
      z.strictObject({ do: z.literal("start"), fps: z.number().int().min(1).max(60).optional() }),
      z.strictObject({ do: z.literal("stop") }),
      z.strictObject({ do: z.literal("status") }),
    ]),
  }),
  z.strictObject({ type: z.literal("clipboard"), selection: Selection.optional(), text: z.string().max(1_000_000).optional() }),
  z.strictObject({
    type: z.literal("open_url"),
    url: z.string().min(1).max(8192),
    target: z.enum(["blank", "current"]).optional(),
    label: z.string().max(64).optional(),
  }),
  z.strictObject({ type: z.literal("tabs") }),
  z.strictObject({ type: z.literal("on_tab"), tab: z.string().min(1).max(128), close: z.boolean().optional() }),
  z.strictObject({ type: z.literal("exec"), what: ExecSchema }),
  z.strictObject({ type: z.literal("read_file"), path: Path }),
  z.strictObject({ type: z.literal("write_file"), what: WriteFileSchema }),
  z.strictObject({ type: z.literal("list_files"), path: Path }),
  z.strictObject({ type: z.literal("grep"), what: GrepSchema }),
  z.strictObject({ type: z.literal("glob"), what: GlobSchema }),
]);

export type Step = z.infer<typeof StepSchema>;

export const BatchSchema = z.strictObject({
  actions: z.array(z.unknown()).max(500),
  want: z.array(z.enum(["frame", "cursor"])).max(2).optional(),
  settle_ms: Ms30.optional(),
  have_frame: z.string().max(128).optional(),
  keep_going: z.boolean().optional(),
});

/** Steps that send input to the screen: refused while a person holds it exclusively. */
export const INPUT_STEPS: ReadonlySet<Step["type"]> = new Set([
  "move",
  "click",
  "double_click",
  "drag",
  "path",
  "mouse_down",
  "mouse_up",
  "scroll",
  "type",
  "press",
  "key_down",
  "key_up",
  "on_window",
  "launch",
  "open_url",
  "on_tab",
]);
