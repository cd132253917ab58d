import { describe, expect, it } from "vitest";
import { z } from "zod";
import { forAgent, validateBatch } from "~/models/batch.server";
import { ArrangeSchema, ElementOpSchema, STEP_TYPES, StepSchema, WidgetOpSchema, WireStepSchema, changesScreen } from "~/protocol/actions";
import { refusal } from "../support/refusal";

// The action vocabulary is written once (app/protocol/) for the server and the in-box agent
// (issue 11, item 15). These hold it to the seed's tables (000, "Action types", "Element
// operations", "Native widgets", the `arrange` bodies) field by field, and check that every
// step the server accepts reaches the box whole: the agent parses it with its strict schema.

/** 000 "Action types": each `type` and its fields, as the tables write them. */
const SEED_FIELDS: Record<string, string[]> = {
  move: ["to", "motion", "seed", "pause_ms"],
  click: ["at", "button", "held", "motion", "seed"],
  double_click: ["at", "button", "motion", "seed"],
  drag: ["from", "to", "button", "held", "motion", "seed"],
  path: ["through", "button", "held", "motion", "seed"],
  mouse_down: ["at", "button", "motion", "seed", "hold_ms"],
  mouse_up: ["at", "button"],
  scroll: ["at", "dx", "dy"],
  // `secret_ref` is issue 12's, from 004 ("fill/type can name one"): text or a secret's name.
  type: ["text", "delay_ms", "secret_ref"],
  press: ["chord", "then", "held"],
  key_down: ["key", "hold_ms"],
  key_up: ["key"],
  wait: ["ms"],
  wait_still: ["settle_ms", "within_ms"],
  await_window: ["what"],
  capture: ["what"],
  cursor: [],
  windows: ["active"],
  on_window: ["window", "what"],
  launch: ["app", "args"],
  apps: [],
  record: ["what"],
  clipboard: ["selection", "text"],
  open_url: ["url", "target", "label"],
  tabs: [],
  on_tab: ["tab", "close"],
  on_page: ["what"],
  look: ["what"],
  snapshot: ["what"],
  read: ["what"],
  evaluate: ["what"],
  page_shot: ["what"],
  dialog: ["accept", "text"],
  on_node: ["what"],
  exec: ["what"],
  read_file: ["path"],
  write_file: ["what"],
  list_files: ["path"],
  grep: ["what"],
  glob: ["what"],
};

/** The `what: {…}` the seed spells out. */
const SEED_WHAT: Record<string, string[]> = {
  await_window: ["class", "within_ms"],
  capture: ["window", "region", "scale", "pointer", "tab"],
  look: ["query", "limit", "scroll", "exact", "role", "tab"],
  snapshot: ["scope", "limit", "tab", "delta", "quiet_ms"],
  read: ["format", "limit", "max_links", "tab"],
  evaluate: ["expression", "timeout_ms", "limit"],
  page_shot: ["full", "format", "quality", "tab", "annotate"],
  exec: ["argv", "timeout_ms"],
  write_file: ["path", "contents_base64"],
  grep: ["pattern", "path", "include", "ignore_case", "limit"],
  glob: ["pattern", "path", "limit"],
};

/** 000 "Element operations" and "Native widgets". */
const SEED_ELEMENT_OPS: Record<string, string[]> = {
  click: ["query", "button", "double", "new_tab", "motion", "seed"],
  drag: ["from", "to", "button", "motion", "seed"],
  // `secret_ref` is 004's ("`text` or `secret_ref`"): issue 12 asks for it beside the seed's `text`.
  fill: ["query", "text", "secret_ref"],
  focus: ["query"],
  check: ["query", "on"],
  options: ["query"],
  choose: ["query", "options", "drop"],
  upload: ["query", "paths"],
  hover: ["query", "motion", "seed"],
  highlight: ["query", "ms"],
  wait_for: ["query", "gone", "within_ms", "or", "exact", "quiet_ms", "enabled", "load", "until"],
  history: ["go"],
  scroll: ["query", "to", "dx", "dy"],
};
const SEED_WIDGET_OPS: Record<string, string[]> = {
  tree: ["app", "depth"],
  find: ["node", "limit"],
  focus: ["node"],
  invoke: ["node", "action"],
  set: ["node", "value"],
};

const keysOf = (s: z.ZodType): string[] => {
  let t: z.ZodType = s;
  while (t instanceof z.ZodOptional || t instanceof z.ZodNullable) t = t.unwrap() as z.ZodType;
  return Object.keys((t as z.ZodObject).shape).sort();
};
/** Fields of each variant of a discriminated union, by its discriminator, the discriminator left out. */
const variants = (u: { options: readonly z.ZodObject[] }, key: string): Record<string, string[]> =>
  Object.fromEntries(u.options.map((o) => [(o.shape[key] as z.ZodLiteral).value, keysOf(o).filter((k) => k !== key)]));
const sorted = (r: Record<string, string[]>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, [...v].sort()]));

describe("the vocabulary is the seed's (000)", () => {
  it("every action type, with the seed's fields and no others", () => {
    expect(variants(StepSchema, "type")).toEqual(sorted(SEED_FIELDS));
    expect([...STEP_TYPES].sort()).toEqual(Object.keys(SEED_FIELDS).sort());
  });

  it("every `what: {…}` the seed spells out", () => {
    const byType = new Map<string, z.ZodObject>(StepSchema.options.map((o) => [o.shape.type.value, o]));
    for (const [type, fields] of Object.entries(SEED_WHAT)) {
      expect(keysOf(byType.get(type)!.shape.what as z.ZodType), type).toEqual([...fields].sort());
    }
  });

  it("element operations, widget operations and the arrange bodies", () => {
    expect(variants(ElementOpSchema, "op")).toEqual(sorted(SEED_ELEMENT_OPS));
    expect(variants(WidgetOpSchema, "op")).toEqual(sorted(SEED_WIDGET_OPS));
    expect(variants(ArrangeSchema, "how")).toEqual({ at: ["to"], size: ["height", "width"], maximise: [], minimise: [], restore: [] });
  });
});

/** One well-formed step of every type, fields filled in where the seed has them. */
const SAMPLES: Array<Record<string, unknown>> = [
  { type: "move", to: { x: 10, y: 20 }, motion: "human", seed: 7, pause_ms: 5 },
  { type: "click", at: { x: 1, y: 2 }, button: "right", held: ["shift"], motion: "smooth", seed: 1 },
  { type: "double_click", at: { x: 1, y: 2 }, button: "left", motion: "instant", seed: 2 },
  { type: "drag", from: { x: 1, y: 2 }, to: { x: 3, y: 4 }, button: "middle", held: ["ctrl", "alt"], motion: "human", seed: 3 },
  { type: "path", through: [{ x: 1, y: 2 }, { x: 3, y: 4 }], button: "left", held: ["super"], motion: "smooth", seed: 4 },
  { type: "mouse_down", at: { x: 5, y: 5 }, button: "left", motion: "instant", seed: 5, hold_ms: 60_000 },
  { type: "mouse_up", at: { x: 5, y: 5 }, button: "left" },
  { type: "scroll", at: { x: 5, y: 5 }, dx: -2, dy: 3 },
  { type: "type", text: "héllo 中文", delay_ms: 10 },
  { type: "press", chord: ["ctrl+a", "Delete"], then: "Return", held: ["shift"] },
  { type: "key_down", key: "shift", hold_ms: 1 },
  { type: "key_up", key: "shift" },
  { type: "wait", ms: 30_000 },
  { type: "wait_still", settle_ms: 400, within_ms: 10_000 },
  { type: "await_window", what: { class: "xterm", within_ms: 30_000 } },
  { type: "capture", what: { window: "0x00a00003", region: { x: 0, y: 0, width: 10, height: 10 }, scale: 50, pointer: true } },
  { type: "cursor" },
  { type: "windows", active: true },
  { type: "on_window", window: "xterm", what: { do: "arrange", how: "size", width: 800, height: 600 } },
  { type: "launch", app: "xterm", args: ["-title", "t"] },
  { type: "apps" },
  { type: "record", what: { do: "start", fps: 12 } },
  { type: "clipboard", selection: "primary", text: "x" },
  { type: "open_url", url: "https://example.com", target: "current", label: "home" },
  { type: "tabs" },
  { type: "on_tab", tab: "home", close: true },
  { type: "on_page", what: { op: "wait_for", query: "Example Domain", within_ms: 1000, load: "load" } },
  { type: "look", what: { query: "Sign in", limit: 5, scroll: true, exact: false, role: "button", tab: "home" } },
  { type: "snapshot", what: { scope: "form", limit: 100, tab: "home", delta: true, quiet_ms: 200 } },
  { type: "read", what: { format: "markdown", limit: 2000, max_links: 20, tab: "home" } },
  { type: "evaluate", what: { expression: "document.title", timeout_ms: 5000, limit: 2000 } },
  { type: "page_shot", what: { full: false, format: "png", quality: 70, tab: null, annotate: false } },
  { type: "dialog", accept: true, text: "ok" },
  { type: "on_node", what: { op: "set", node: { query: "Street", role: "text" }, value: "Main St" } },
  { type: "exec", what: { argv: ["ls", "-la"], timeout_ms: 10_000 } },
  { type: "read_file", path: "/tmp/a.txt" },
  { type: "write_file", what: { path: "/tmp/a.txt", contents_base64: "aGk=" } },
  { type: "list_files", path: "/tmp" },
  { type: "grep", what: { pattern: "x", path: "/etc", include: "*.conf", ignore_case: true, limit: 200 } },
  { type: "glob", what: { pattern: "*.txt", path: "/tmp", limit: 10 } },
];


describe("one schema for the server and the box", () => {
  it("every step the server accepts reaches the box whole: the agent's strict schema takes it unchanged", () => {
    expect(new Set(SAMPLES.map((s) => s.type))).toEqual(new Set(STEP_TYPES));
    const { steps } = validateBatch({ actions: SAMPLES });
    steps.forEach((step, i) => {
      const wire = forAgent(step, i);
      const parsed = WireStepSchema.safeParse(wire);
      expect(parsed.success, `${step.type}: ${parsed.error?.message}`).toBe(true);
      expect(parsed.data, step.type).toEqual(wire);
    });
    expect(forAgent(steps[19]!, 19)).toEqual({ type: "launch", argv: ["xterm", "-title", "t"] });
    expect(forAgent(steps[20]!, 20)).toEqual({ type: "wait", ms: 0 });
  });

  it("what the server would forward in its own form is refused from a caller", () => {
    // The box's forms (a resolved argv, env for the server's own commands) are not /v1's.
    for (const step of [{ type: "launch", argv: ["xterm"] }, { type: "exec", what: { argv: ["true"], env: { A: "1" } } }]) {
      expect(refusal(() => validateBatch({ actions: [step] })).code).toBe("bad_request");
    }
  });
});

describe("on_window arrange (item 9)", () => {
  const parse = (what: unknown) => StepSchema.safeParse({ type: "on_window", window: "w", what });
  it('takes the seed\'s flat `{"do": "arrange", "how": "maximise"}`, with `to` or `width`/`height` beside `how`', () => {
    expect(parse({ do: "arrange", how: "maximise" }).data).toMatchObject({ what: { do: "arrange", how: "maximise" } });
    expect(parse({ do: "arrange", how: "at", to: { x: 1, y: 2 } }).data).toMatchObject({ what: { how: "at", to: { x: 1, y: 2 } } });
    expect(parse({ do: "arrange", how: "size", width: 3, height: 4 }).data).toMatchObject({ what: { how: "size", width: 3, height: 4 } });
  });

  it("reads the nested form as the flat one, and refuses a mix or a missing field", () => {
    expect(parse({ do: "arrange", how: { how: "at", to: { x: 1, y: 2 } } }).data).toEqual(parse({ do: "arrange", how: "at", to: { x: 1, y: 2 } }).data);
    for (const bad of [
      { do: "arrange", how: { how: "maximise" }, to: { x: 1, y: 1 } },
      { do: "arrange", how: "at" },
      { do: "arrange", how: "size", width: 3 },
      { do: "arrange", how: "fly" },
      { do: "focus", how: "maximise" },
    ]) {
      expect(parse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });
});

describe("steps not built yet (item 14)", () => {
  it("pass validation when well formed; a malformed one refuses the batch, naming it", () => {
    const { steps } = validateBatch({ actions: [{ type: "open_url", url: "about:blank" }, { type: "on_page", what: { op: "click", query: "More information" } }] });
    expect(steps.map((s) => s.type)).toEqual(["open_url", "on_page"]);
    const bad = refusal(() => validateBatch({ actions: [{ type: "open_url", url: "about:blank" }, { type: "on_page", what: { op: "click" } }] }));
    expect(bad.code).toBe("bad_request");
    expect(bad.message).toContain("actions[1] (on_page)");
    expect(refusal(() => validateBatch({ actions: [{ type: "teleport" }] })).message).toContain('unknown action type "teleport"');
  });
});

describe("which steps a person's control refuses", () => {
  it("native widget operations that act (focus, invoke, set) change the screen; tree and find only read", () => {
    const node = { query: "Street", role: "text" };
    expect(changesScreen({ type: "on_node", what: { op: "set", node, value: "x" } })).toBe(true);
    expect(changesScreen({ type: "on_node", what: { op: "invoke", node } })).toBe(true);
    expect(changesScreen({ type: "on_node", what: { op: "focus", node } })).toBe(true);
    expect(changesScreen({ type: "on_node", what: { op: "find", node } })).toBe(false);
    expect(changesScreen({ type: "on_node", what: { op: "tree" } })).toBe(false);
    expect(changesScreen({ type: "click" })).toBe(true);
    expect(changesScreen({ type: "frame" })).toBe(false);
  });
});
