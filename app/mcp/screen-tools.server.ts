import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { TakeoverSchema, TicketSchema } from "~/protocol/api-box";
import { ElementQuerySchema, ReadQuerySchema, SnapshotQuerySchema } from "~/protocol/api-page";
import { FrameQuerySchema } from "~/models/screen.server";
import { BatchSchema, ElementOpSchema, StepSchema, WidgetOpSchema } from "~/protocol/actions";
import { ADD, BoxId, READ, ScreenNo, WRITE, addTool, json, seg, split } from "./tool-kit.server";
import type { ImageSpot } from "./images.server";

// The screen and page tools: one `batch` tool taking the seed's batch body, the frame as an MCP
// image, human control (takeover, give_back, a viewer ticket), and the page routes (snapshot,
// read, one element operation). Each input schema is the route's own zod schema plus the box id
// and screen of its path.

const screenPath = (box: string, screen: number) => `/v1/boxes/${seg(box)}/screens/${seg(screen)}`;
const boxPath = (box: string) => `/v1/boxes/${seg(box)}`;
const at = { box: BoxId, screen: ScreenNo };

/** A query-string flag as an MCP client sends it: a JSON boolean ("true" and "false" still do). */
const Flag = z.union([z.boolean(), z.enum(["true", "false"])]);

/** `delta` of page_snapshot in JSON types: true, false, or the rev (a number) of an earlier snapshot. */
const Delta = z
  .union([z.boolean(), z.number().int().min(0).max(999_999_999_999_999), z.string().regex(/^(true|false|\d{1,15})$/, "true, false or a rev")])
  .describe("true: only what changed since this tab's last snapshot; a rev (a number): since that snapshot; false: everything.");

/** Names a batch's images by step: `step 2 (capture)`, and the final screen of `want: ["frame"]`. */
/** A batch's images: each `capture` and `page_shot` step's result, and the final frame (`want`). */
const batchImages = (actions: { type: string }[]): ImageSpot[] => [
  ...actions.flatMap((a, i) => (a.type === "capture" || a.type === "page_shot" ? [{ path: ["results", i], label: `step ${i} (${a.type})` }] : [])),
  { path: ["frame"], label: "the final frame (want: frame)" },
];

export function addScreenTools(server: McpServer) {
  addTool(server, {
    name: "batch",
    title: "Run a batch of actions",
    description:
      "Runs steps on one screen, in order, in one round trip (the body of POST /v1/boxes/{id}/screens/{screen}/actions). " +
      "Steps: pointer and keys (click, move, drag, scroll, type, press…), windows, open_url and tabs, page steps by element " +
      '(`{"type": "on_page", "what": {"op": "fill", "query": "Email", "text": "…"}}`, click, check, choose, wait_for…), files, exec. ' +
      '`want: ["frame"]` adds the final screen as an image. Each step is recorded in the trace, so fork_box can replay it.',
    input: BatchSchema.extend({ ...at, actions: z.array(StepSchema).max(500) }),
    annotations: WRITE,
    run: async (args, c, extra) => {
      const { box, screen, rest } = split(args);
      const out = await c.request("POST", `${screenPath(box, screen)}/actions`, { body: rest, signal: extra.signal });
      return json(out, batchImages(rest.actions));
    },
  });

  addTool(server, {
    name: "frame",
    title: "Screenshot a screen",
    description:
      "Captures a screen (or a window, or a rectangle) as a PNG image. `have` (the hash of your last frame) answers unchanged: true and no image when nothing changed.",
    input: FrameQuerySchema.extend({ ...at, pointer: Flag.optional().describe("Draws the pointer into the image.") }),
    annotations: READ,
    run: async (args, c, extra) => {
      const { box, screen, rest } = split(args);
      return json(await c.request("GET", `${screenPath(box, screen)}/frame`, { query: rest, signal: extra.signal }), [{ path: [], label: "the frame" }]);
    },
  });

  addTool(server, {
    name: "takeover",
    title: "Hand a screen to a person",
    description:
      "Gives the screen to the people of the console: while it is held exclusively (shared: false, the default), agent input to it is refused with `denied`. " +
      "Answers the console URL where a person takes over. give_back ends it.",
    input: TakeoverSchema.extend(at),
    annotations: ADD,
    run: async (args, c, extra) => {
      const { box, screen, rest } = split(args);
      return json(await c.request("POST", `${screenPath(box, screen)}/takeover`, { body: rest, signal: extra.signal }));
    },
  });

  addTool(server, {
    name: "give_back",
    title: "Take a screen back",
    description: "Ends a takeover this key asked for: the agent drives the screen again.",
    input: z.strictObject(at),
    annotations: { ...ADD, idempotentHint: true },
    run: async (args, c, extra) => json(await c.request("DELETE", `${screenPath(args.box, args.screen)}/takeover`, { signal: extra.signal })),
  });

  addTool(server, {
    name: "viewer_ticket",
    title: "Make a viewer ticket",
    description: "Makes a short-lived ticket (15 minutes) for the screen's viewer socket, to watch (mode view) or drive (mode control) the desktop.",
    input: TicketSchema.extend(at),
    annotations: ADD,
    run: async (args, c, extra) => {
      const { box, screen, rest } = split(args);
      return json(await c.request("POST", `${screenPath(box, screen)}/viewer/ticket`, { body: rest, signal: extra.signal }));
    },
  });

  addTool(server, {
    name: "page_snapshot",
    title: "List the page's controls",
    description:
      "Lists the controls of a browser tab (screen 0's front tab unless `tab` names one) with refs, roles, names, values and state. " +
      "A ref (e12) is a `query` the page tools and on_page steps take. `delta` (a rev, or true) lists only what changed.",
    input: SnapshotQuerySchema.extend({ box: BoxId, delta: Delta.optional() }),
    annotations: READ,
    run: async ({ box, ...query }, c, extra) => json(await c.request("GET", `${boxPath(box)}/page/snapshot`, { query, signal: extra.signal })),
  });

  addTool(server, {
    name: "page_read",
    title: "Read the page",
    description: "Reads a browser tab's content as markdown (default), text or raw HTML, with its links.",
    input: ReadQuerySchema.extend({ box: BoxId }),
    annotations: READ,
    run: async ({ box, ...query }, c, extra) => json(await c.request("GET", `${boxPath(box)}/page`, { query, signal: extra.signal })),
  });

  addTool(server, {
    name: "page_element",
    title: "Act on a page element",
    description:
      'One element operation on a browser tab: `what` is {"op": "fill", "query": "Email", "text": "…"}, click, check, choose, hover, focus, wait_for, scroll, history, upload… ' +
      "`query` is a label, text, role, ref from page_snapshot, or css=…. Answers the element, the URL and the controls that changed. Recorded in the trace.",
    input: ElementQuerySchema.extend({ box: BoxId, what: ElementOpSchema }),
    annotations: WRITE,
    run: async ({ box, what, ...query }, c, extra) =>
      json(await c.request("POST", `${boxPath(box)}/page/element`, { query, body: what, signal: extra.signal })),
  });

  addTool(server, {
    name: "desktop_node",
    title: "Act on a native widget",
    description:
      'One native widget operation through AT-SPI, on a box with the `accessibility` feature: `what` is {"op": "find", "node": {"query": "Street", "role": "text"}}, ' +
      "tree (app, depth), focus, invoke (action), set (value). Works on GTK and Qt applications and on Chromium's own controls. Recorded in the trace.",
    input: z.strictObject({ ...at, what: WidgetOpSchema }),
    annotations: WRITE,
    run: async (args, c, extra) => {
      const { box, screen, rest } = split(args);
      return json(await c.request("POST", `${screenPath(box, screen)}/desktop/node`, { body: rest.what, signal: extra.signal }));
    },
  });
}
