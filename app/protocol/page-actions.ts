import { z } from "zod";
import { Button, Limit, Motion, Ms30, Path, PointSchema, Query, Seed, TabRef, Text } from "./action-fields";

// Steps of seed 000 whose machinery is not built yet: pages by element (`on_page`, `look`,
// `snapshot`, `read`, `evaluate`, `page_shot`, `dialog`) and native widgets (`on_node`). Their
// fields are checked like every step's, so a misspelt one refuses the batch before anything
// runs; a well-formed one goes to the box like any step, and its result there is `unsupported`
// (so `stopped_at` and `keep_going` work as for any refused step). The seed names some fields
// without a type (`or`, `load`, `until`, `delta`): those types are a first reading, for the
// issue that builds pages to settle.

const pointer = { motion: Motion.optional(), seed: Seed.optional() };
/** The name of a workspace secret (`secret_ref`). */
export const SecretName = z.string().min(1).max(200);
/** Where a page drag starts or ends: an element, or a point on the page (CSS pixels of the viewport). */
const DragEnd = z.union([Query, PointSchema]);

/** The element operations: the `what` of `on_page`, and the body of `POST …/page/element`. */
export const ElementOpSchema = z.discriminatedUnion("op", [
  z.strictObject({
    op: z.literal("click"),
    query: Query,
    button: Button.optional(),
    double: z.boolean().optional(),
    new_tab: z.boolean().optional(),
    ...pointer,
  }),
  z.strictObject({ op: z.literal("drag"), from: DragEnd, to: DragEnd, button: Button.optional(), ...pointer }),
  // `fill` types either `text` or the value of a workspace secret named by `secret_ref` (004): the
  // value is looked up by the server and never appears in an answer, a trace entry or a log.
  z
    .strictObject({ op: z.literal("fill"), query: Query, text: Text.optional(), secret_ref: SecretName.optional() })
    .refine((f) => (f.text === undefined) !== (f.secret_ref === undefined), {
      message: "give exactly one of `text` and `secret_ref`",
      path: ["text"],
    }),
  z.strictObject({ op: z.literal("focus"), query: Query }),
  z.strictObject({ op: z.literal("check"), query: Query, on: z.boolean().optional() }),
  z.strictObject({ op: z.literal("options"), query: Query }),
  z.strictObject({
    op: z.literal("choose"),
    query: Query,
    options: z.array(z.string().max(1000)).min(1).max(1000),
    drop: z.boolean().optional(),
  }),
  z.strictObject({ op: z.literal("upload"), query: Query, paths: z.array(Path).min(1).max(100) }),
  z.strictObject({ op: z.literal("hover"), query: Query, ...pointer }),
  z.strictObject({ op: z.literal("highlight"), query: Query, ms: Ms30.optional() }),
  z.strictObject({
    op: z.literal("wait_for"),
    query: Query.optional(),
    gone: z.boolean().optional(),
    within_ms: Ms30.optional(),
    or: z.union([Query, z.array(Query).min(1).max(20)]).optional(),
    exact: z.boolean().optional(),
    quiet_ms: Ms30.optional(),
    enabled: z.boolean().optional(),
    load: z.union([z.boolean(), z.enum(["load", "domcontentloaded", "networkidle"])]).optional(),
    until: z.string().min(1).max(10_000).optional(),
  }),
  z.strictObject({ op: z.literal("history"), go: z.enum(["back", "forward", "reload"]) }),
  z.strictObject({
    op: z.literal("scroll"),
    query: Query.optional(),
    to: z.enum(["by", "top", "bottom"]).optional(),
    dx: z.number().int().min(-100_000).max(100_000).optional(),
    dy: z.number().int().min(-100_000).max(100_000).optional(),
  }),
]);

/** `node` of a widget operation: `{"query": "Street", "role": "text"}`. */
const NodeQuery = z.strictObject({ query: Query, role: z.string().min(1).max(100).optional() });

/** The widget operations: the `what` of `on_node`, and the body of `POST …/desktop/node`. */
export const WidgetOpSchema = z.discriminatedUnion("op", [
  z.strictObject({ op: z.literal("tree"), app: z.string().min(1).max(200).optional(), depth: z.number().int().min(1).max(100).optional() }),
  z.strictObject({ op: z.literal("find"), node: NodeQuery, limit: Limit.optional() }),
  z.strictObject({ op: z.literal("focus"), node: NodeQuery }),
  z.strictObject({ op: z.literal("invoke"), node: NodeQuery, action: z.string().min(1).max(200).optional() }),
  z.strictObject({ op: z.literal("set"), node: NodeQuery, value: z.union([z.string().max(100_000), z.number(), z.boolean()]) }),
]);

export const OnPageStep = z.strictObject({ type: z.literal("on_page"), what: ElementOpSchema });
export const LookStep = z.strictObject({
  type: z.literal("look"),
  what: z.strictObject({
    query: Query,
    limit: Limit.optional(),
    scroll: z.boolean().optional(),
    exact: z.boolean().optional(),
    role: z.string().min(1).max(100).optional(),
    tab: TabRef.optional(),
  }),
});
export const SnapshotStep = z.strictObject({
  type: z.literal("snapshot"),
  what: z
    .strictObject({
      scope: Query.optional(),
      limit: Limit.optional(),
      tab: TabRef.optional(),
      delta: z.union([z.boolean(), z.string().min(1).max(200), z.number().int().min(0)]).optional(),
      quiet_ms: Ms30.optional(),
    })
    .optional(),
});
export const ReadStep = z.strictObject({
  type: z.literal("read"),
  what: z
    .strictObject({
      format: z.enum(["markdown", "text", "raw"]).optional(),
      limit: z.number().int().min(1).max(10_000_000).optional(),
      max_links: z.number().int().min(0).max(10_000).optional(),
      tab: TabRef.optional(),
    })
    .optional(),
});
export const EvaluateStep = z.strictObject({
  type: z.literal("evaluate"),
  what: z.strictObject({
    expression: z.string().min(1).max(1_000_000),
    timeout_ms: Ms30.optional(),
    limit: z.number().int().min(1).max(10_000_000).optional(),
  }),
});
export const PageShotStep = z.strictObject({
  type: z.literal("page_shot"),
  what: z
    .strictObject({
      full: z.boolean().optional(),
      format: z.enum(["png", "jpeg", "webp"]).optional(),
      quality: z.number().int().min(0).max(100).optional(),
      tab: TabRef.nullable().optional(),
      annotate: z.boolean().optional(),
    })
    .optional(),
});
export const DialogStep = z.strictObject({
  type: z.literal("dialog"),
  accept: z.boolean().optional(),
  text: z.string().max(100_000).optional(),
});
export const OnNodeStep = z.strictObject({ type: z.literal("on_node"), what: WidgetOpSchema });

/** The step types above, in the seed's order. */
export const LATER_STEPS = ["on_page", "look", "snapshot", "read", "evaluate", "page_shot", "dialog", "on_node"] as const;
export type LaterStepType = (typeof LATER_STEPS)[number];
