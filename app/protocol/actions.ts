import { z } from "zod";
import {
  Argv,
  arrangeForms,
  Button,
  CaptureSchema,
  Chord,
  ClipboardText,
  ExecSchema,
  GlobSchema,
  GrepSchema,
  Held,
  HoldMs,
  KeyName,
  Motion,
  Ms30,
  PageUrl,
  Path,
  PointSchema,
  Seed,
  Selection,
  TabRef,
  Text,
  TypedText,
  WaitWindowSchema,
  WindowRef,
  WriteFileSchema,
} from "./action-fields";
import { DialogStep, EvaluateStep, LookStep, OnNodeStep, OnPageStep, PageShotStep, ReadStep, SnapshotStep } from "./page-actions";

// The action vocabulary of seed 000 ("Actions"), written once. The server checks every batch
// against `StepSchema`; the in-box agent is bundled with this file and parses what the server
// sends with `WireStepSchema`: the same steps, except the two the server rewrites (`launch` with
// a catalog name becomes a command line; `apps` is answered by the server). Every object is
// strict on both sides: "Request bodies refuse unknown keys" (000), and the agent (whose only
// caller is the server) refuses a field it does not know rather than dropping it, so a step is
// never done with part of what was asked silently left out.

export * from "./action-fields";
export { ElementOpSchema, LATER_STEPS, type LaterStepType, WidgetOpSchema } from "./page-actions";

const pointer = { motion: Motion.optional(), seed: Seed.optional() };
const Chords = z.union([Chord, z.array(Chord).min(1).max(50)]);

/**
 * `on_window`'s `what`. The seed's form is flat: `{"do": "arrange", "how": "maximise"}`, with
 * `to` or `width`/`height` beside `how` as in the `arrange` bodies. The nested form
 * (`"how": {"how": "at", "to": …}`), the only one accepted before, is still read (traces
 * recorded then are replayed by fork) and becomes the flat one.
 */
const ArrangeWhat = z.discriminatedUnion("how", arrangeForms({ do: z.literal("arrange") }));
const flattenArrange = (v: unknown): unknown => {
  if (typeof v !== "object" || v === null) return v;
  const { do: verb, how, ...rest } = v as Record<string, unknown>;
  if (verb !== "arrange" || typeof how !== "object" || how === null || Array.isArray(how) || Object.keys(rest).length) return v;
  return { do: "arrange", ...how };
};
export const WindowWhatSchema = z.preprocess(
  flattenArrange,
  z.discriminatedUnion("do", [z.strictObject({ do: z.literal("focus") }), z.strictObject({ do: z.literal("close") }), ArrangeWhat]),
);

const step = <T extends string, S extends z.core.$ZodLooseShape>(type: T, shape: S) =>
  z.strictObject({ type: z.literal(type), ...shape });

/** The steps both sides know in the same form. */
const COMMON = [
  step("move", { to: PointSchema, ...pointer, pause_ms: Ms30.optional() }),
  step("click", { at: PointSchema.optional(), button: Button.optional(), held: Held.optional(), ...pointer }),
  step("double_click", { at: PointSchema.optional(), button: Button.optional(), ...pointer }),
  step("drag", { from: PointSchema, to: PointSchema, button: Button.optional(), held: Held.optional(), ...pointer }),
  step("path", { through: z.array(PointSchema).min(2).max(1000), button: Button.optional(), held: Held.optional(), ...pointer }),
  step("mouse_down", { at: PointSchema.optional(), button: Button.optional(), ...pointer, hold_ms: HoldMs.optional() }),
  step("mouse_up", { at: PointSchema.optional(), button: Button.optional() }),
  step("scroll", {
    at: PointSchema.optional(),
    dx: z.number().int().min(-100).max(100).optional(),
    dy: z.number().int().min(-100).max(100).optional(),
  }),
  step("press", { chord: Chords, then: z.union([Chord, z.array(Chord).max(50)]).optional(), held: Held.optional() }),
  step("key_down", { key: KeyName, hold_ms: HoldMs.optional() }),
  step("key_up", { key: KeyName }),
  step("wait", { ms: Ms30 }),
  step("wait_still", { settle_ms: Ms30.optional(), within_ms: Ms30.optional() }),
  step("await_window", { what: WaitWindowSchema }),
  step("capture", { what: CaptureSchema.optional() }),
  step("cursor", {}),
  step("windows", { active: z.boolean().optional() }),
  step("on_window", { window: WindowRef, what: WindowWhatSchema }),
  step("record", {
    what: z.discriminatedUnion("do", [
      z.strictObject({ do: z.literal("start"), fps: z.number().int().min(1).max(60).optional() }),
      z.strictObject({ do: z.literal("stop") }),
      z.strictObject({ do: z.literal("status") }),
    ]),
  }),
  step("clipboard", { selection: Selection.optional(), text: ClipboardText.optional() }),
  step("open_url", { url: PageUrl, target: z.enum(["blank", "current"]).optional(), label: TabRef.optional() }),
  step("tabs", {}),
  step("on_tab", { tab: TabRef, close: z.boolean().optional() }),
  step("read_file", { path: Path }),
  step("write_file", { what: WriteFileSchema }),
  step("list_files", { path: Path }),
  step("grep", { what: GrepSchema }),
  step("glob", { what: GlobSchema }),
  OnPageStep,
  LookStep,
  SnapshotStep,
  ReadStep,
  EvaluateStep,
  PageShotStep,
  DialogStep,
  OnNodeStep,
] as const;

const TypeDelay = z.number().int().min(0).max(1000).optional();
/** A secret's name (004 `secret_ref`): the server types its value; the name is all that is kept. */
export const SecretRef = z.string().min(1).max(200);

/**
 * `type` as a caller writes it: `text`, or `secret_ref` naming a secret of the box's workspace,
 * whose value the server puts in the agent's copy only (never in a result, trace or log).
 */
const TypeStep = step("type", { text: TypedText.optional(), secret_ref: SecretRef.optional(), delay_ms: TypeDelay }).refine(
  (s) => (s.text === undefined) !== (s.secret_ref === undefined),
  { message: "give exactly one of text and secret_ref" },
);

/** Every step a batch may hold, as a caller of `/v1` writes it. */
export const StepSchema = z.discriminatedUnion("type", [
  ...COMMON,
  TypeStep,
  step("launch", { app: z.string().min(1).max(64), args: z.array(z.string().max(4096)).max(64).optional() }),
  step("apps", {}),
  step("exec", { what: ExecSchema }),
]);
export type Step = z.output<typeof StepSchema>;
export type StepType = Step["type"];

/**
 * `exec` as the server sends it to the agent's `/exec` route: the public body, plus `env` for
 * the server's own commands (apt-get when installing apps). No caller of `/v1` can set it.
 */
export const ExecWireSchema = ExecSchema.extend({ env: z.record(z.string().max(1000), z.string().max(64 * 1024)).optional() });

/** Every step the agent runs, as the server sends it. */
export const WireStepSchema = z.discriminatedUnion("type", [
  ...COMMON,
  step("type", { text: Text, delay_ms: TypeDelay }),
  /** `launch` after the server looked the app up in its catalog: argv is the app's, then `args`. */
  step("launch", { argv: Argv }),
  step("exec", { what: ExecWireSchema }),
]);
export type WireStep = z.output<typeof WireStepSchema>;
export type WireStepType = WireStep["type"];

/** The body of `POST …/actions`; each of `actions` is checked on its own to name the step. */
export const BatchSchema = z.strictObject({
  actions: z.array(z.unknown()).max(500),
  want: z.array(z.enum(["frame", "cursor"])).max(2).optional(),
  settle_ms: Ms30.optional(),
  have_frame: z.string().max(128).optional(),
  keep_going: z.boolean().optional(),
});
export type Batch = z.output<typeof BatchSchema>;

/**
 * A batch as the server sends it to the agent. A batch that mixes page steps (run by the server
 * through Playwright) with the rest reaches the agent in parts: `index_base` is the index of the
 * part's first step in the whole batch (results and messages name whole-batch indexes);
 * `continued` says a part came before (the holds log goes on), `continues` that one follows
 * (nothing is let go, no settle, no frame, windows or tabs yet).
 */
export const WireBatchSchema = BatchSchema.extend({
  index_base: z.number().int().min(0).max(500).optional(),
  continued: z.boolean().optional(),
  continues: z.boolean().optional(),
});

/** Step types, for telling an unknown `type` from a known one with wrong fields. */
export const STEP_TYPES: ReadonlySet<string> = new Set(StepSchema.options.map((o) => o.shape.type.value));

/**
 * Steps that send input to the screen: refused while a person holds it exclusively (by the
 * server, and by the agent for a batch that was already running when the person took over).
 */
export const INPUT_STEPS: ReadonlySet<StepType> = new Set<StepType>([
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
  // Page steps that act on the page: agent input like a click.
  "on_page",
  "evaluate",
  "dialog",
]);
/** Steps that reach every screen of the box (a command can drive any display). */
export const BOX_STEPS: ReadonlySet<StepType> = new Set<StepType>(["exec", "write_file"]);

/** Whether a step changes its screen: input, or setting the clipboard. */
export const changesScreen = (s: { type: string; text?: unknown; what?: unknown }): boolean =>
  INPUT_STEPS.has(s.type as StepType) || (s.type === "clipboard" && s.text !== undefined) || (s.type === "on_node" && actsOnNode(s.what));

/** A native widget operation that changes the desktop (`focus`, `invoke`, `set`); `tree` and `find` only read. */
const actsOnNode = (what: unknown): boolean => {
  const op = (what as { op?: unknown } | undefined)?.op;
  return op !== "tree" && op !== "find";
};
