import { z } from "zod";
import { keyProblem, keysymFor, parseChord, textProblem } from "./keys";

// The fields the action vocabulary is made of (seed 000, "Actions"), and the limits both sides
// hold to. Shared by the server and the in-box agent (bundled for Node 18): zod only, nothing
// node-only, no `~/` alias. Every object is strict: see actions.ts.

/** `exec`: the seed's "Maximum 10 minutes", and what a command gets when it names none. */
export const MAX_EXEC_MS = 600_000;
export const DEFAULT_EXEC_MS = 60_000;
/** A held button or key: "default 10 seconds, maximum 60" (000). */
export const DEFAULT_HOLD_MS = 10_000;
export const MAX_HOLD_MS = 60_000;
/** `wait` and `wait_still`: "Both stop at 30 seconds" (000); the defaults of `wait_still`. */
export const MAX_WAIT_MS = 30_000;
export const DEFAULT_SETTLE_MS = 400;
export const DEFAULT_STILL_WITHIN_MS = 10_000;
/** `await_window` with no `within_ms`. */
export const DEFAULT_AWAIT_WINDOW_MS = 10_000;

const int = () => z.number().int();
/** A pixel coordinate: "(0, 0) is the top-left corner" (000). */
export const Coord = int().min(0).max(16_384);
export const Size = int().min(1).max(16_384);
export const PointSchema = z.strictObject({ x: Coord, y: Coord });
export const Button = z.enum(["left", "right", "middle"]);
export const Held = z.array(z.enum(["shift", "ctrl", "alt", "super"])).max(4);
export const Motion = z.enum(["instant", "smooth", "human"]);
export const Seed = int().min(0).max(0xffff_ffff);
export const HoldMs = int().min(1).max(MAX_HOLD_MS);
export const Ms30 = int().min(0).max(MAX_WAIT_MS);
export const Selection = z.enum(["clipboard", "primary"]);
/** A chord ("ctrl+shift+t", "Return", "ctrl++"): every name a key, the ones before the last modifiers. */
export const Chord = z
  .string()
  .min(1)
  .max(200)
  .superRefine((c, ctx) => {
    const problem = keyProblem(c, parseChord);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
/** One key's name (`key_down`, `key_up`): not a chord. */
export const KeyName = z
  .string()
  .min(1)
  .max(200)
  .superRefine((k, ctx) => {
    const problem = keyProblem(k, keysymFor);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
export const Path = z.string().min(1).max(4096);
/** A window: its id (`0x…`), class or instance, or part of its title. */
export const WindowRef = z.string().min(1).max(200);
/** A tab: its id or label ("from `GET /v1/boxes/{id}/pages` or an `open_url` action"). */
export const TabRef = z.string().min(1).max(200);
/** A selector engine with nothing after it (`text=`, `css=  `): Playwright would match the first element. */
const EMPTY_SELECTOR = /^(css|xpath|text|role|id|data-testid|data-test-id|data-test|nth|visible|aria-ref|internal:[a-z-]+)=\s*$/;
/** Text that finds an element or a widget: never blank, nor an engine with no selector. */
export const Query = z
  .string()
  .min(1)
  .max(1000)
  .refine((q) => q.trim() !== "", "is only whitespace; name an element")
  .refine((q) => !EMPTY_SELECTOR.test(q), "has a selector engine with an empty selector after it (as `text=` or `css=`); write the selector after the `=`");
export const Limit = int().min(1).max(10_000);
/** Typed text: the trace keeps it, so it is bounded. */
export const Text = z.string().max(100_000);
/** Text a `type` step types: every character one a key makes (Text is also `fill`'s, which sets a value). */
export const TypedText = Text.superRefine((t, ctx) => {
  const problem = textProblem(t);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});
export const ClipboardText = z.string().max(1_000_000);
/** A NUL byte cannot be passed to a program: each argument is a C string. */
export const Argv = z
  .array(z.string().max(64 * 1024).refine((s) => !s.includes("\0"), "holds a NUL byte, which no program argument can"))
  .min(1)
  .max(1024)
  // The program: an empty name runs nothing (the agent's spawn threw, a 422 in Node's words).
  .refine((a) => a[0] !== "", { message: "the program (argv[0]) is empty", path: [0] });

/** What `open_url` may open: pages, not `javascript:`, `chrome:` or `view-source:`. */
export const URL_SCHEMES = ["http:", "https:", "about:", "data:", "file:"];
/** A data: page can be large (the agent opens 200 kB ones); the trace keeps the URL. */
export const PageUrl = z
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

export const RegionSchema = z.strictObject({ x: Coord, y: Coord, width: Size, height: Size });

/**
 * `capture`: the screen, a window or a region of either; or, with `tab`, that tab's page through
 * DevTools (`region` and `scale` apply to it; a window and the pointer are on the screen, not in
 * a page, so they do not go with `tab`).
 */
export const CaptureSchema = z
  .strictObject({
    window: WindowRef.optional(),
    region: RegionSchema.optional(),
    scale: int().min(1).max(400).optional(),
    pointer: z.boolean().optional(),
    tab: TabRef.optional(),
  })
  .refine((c) => c.tab === undefined || (c.window === undefined && !c.pointer), {
    message: "a tab is captured from its page: `window` and `pointer` are for captures of the screen",
    path: ["tab"],
  });

/** The `arrange` bodies of 000 (Windows), with `extra` fields beside `how`. */
export const arrangeForms = <E extends z.core.$ZodLooseShape>(extra: E) =>
  [
    z.strictObject({ ...extra, how: z.literal("at"), to: PointSchema }),
    z.strictObject({ ...extra, how: z.literal("size"), width: Size, height: Size }),
    z.strictObject({ ...extra, how: z.literal("maximise") }),
    z.strictObject({ ...extra, how: z.literal("minimise") }),
    z.strictObject({ ...extra, how: z.literal("restore") }),
  ] as const;
export const ArrangeSchema = z.discriminatedUnion("how", arrangeForms({}));
export type Arrange = z.infer<typeof ArrangeSchema>;

export const ExecSchema = z.strictObject({
  argv: Argv,
  timeout_ms: int().min(1).max(MAX_EXEC_MS).optional(),
});

export const WriteFileSchema = z.strictObject({ path: Path, contents_base64: z.base64() });

export const GrepSchema = z.strictObject({
  pattern: z.string().min(1).max(1000),
  path: Path.optional(),
  include: z.string().min(1).max(200).optional(),
  ignore_case: z.boolean().optional(),
  limit: Limit.optional(),
});

export const GlobSchema = z.strictObject({
  pattern: z.string().min(1).max(1000),
  path: Path.optional(),
  limit: Limit.optional(),
});

export const WaitWindowSchema = z.strictObject({
  class: z.string().min(1).max(200),
  within_ms: Ms30.optional(),
});

export const ClipboardSetSchema = z.strictObject({ text: ClipboardText, selection: Selection.optional() });
