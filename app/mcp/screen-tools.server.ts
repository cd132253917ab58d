import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { TakeoverSchema, TicketSchema } from "~/protocol/api-box";
import { ElementQuerySchema, ReadQuerySchema, SnapshotQuerySchema } from "~/protocol/api-page";
import { FrameQuerySchema } from "~/models/screen.server";
import { BatchSchema, ElementOpSchema, StepSchema, WidgetOpSchema } from "~/protocol/actions";
import { BoxId, READ, ScreenNo, WRITE, addTool, json, seg, split } from "./tool-kit.server";

// The screen and page tools: one `batch` tool taking the seed's batch body, the frame as an MCP
// image, human control (takeover, give_back, a viewer ticket), and the page routes (snapshot,
// read, one element operation). Each input schema is the route's own zod schema plus the box id
// and screen of its path.

const screenPath = (box: string, screen: number) => `/v1/boxes/${seg(box)}/screens/${seg(screen)}`;
const boxPath = (box: string) => `/v1/boxes/${seg(box)}`;
const at = { box: BoxId, screen: ScreenNo };

interface Frame {
  hash?: string;
  unchanged?: boolean;
  png_base64?: string;
}

/** A /v1 answer with its frame (`png_base64`) moved into an MCP image block after the JSON. */
function withImage(body: object & { frame?: Frame }, frame: Frame | undefined): CallToolResult {
  if (!frame?.png_base64) return json(body);
  const { png_base64, ...rest } = frame;
  const shown = body.frame === frame ? { ...body, frame: { ...rest, image: "the image content block" } } : { ...rest, image: "the image content block" };
  return { content: [{ type: "text", text: JSON.stringify(shown) }, { type: "image", data: png_base64, mimeType: "image/png" }] };
}

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
      const out = await c.request<{ frame?: Frame }>("POST", `${screenPath(box, screen)}/actions`, { body: rest, signal: extra.signal });
      return withImage(out, out.frame);
    },
  });

  addTool(server, {
    name: "frame",
    title: "Screenshot a screen",
    description:
      "Captures a screen (or a window, or a rectangle) as a PNG image. `have` (the hash of your last frame) answers unchanged: true and no image when nothing changed.",
    input: FrameQuerySchema.extend(at),
    annotations: READ,
    run: async (args, c, extra) => {
      const { box, screen, rest } = split(args);
      const out = await c.request<Frame>("GET", `${screenPath(box, screen)}/frame`, { query: rest, signal: extra.signal });
      return withImage(out as object, out);
    },
  });

  addTool(server, {
    name: "takeover",
    title: "Hand a screen to a person",
    description:
      "Gives the screen to the people of the console: while it is held exclusively (shared: false, the default), agent input to it is refused with `denied`. " +
      "Answers the console URL where a person takes over. give_back ends it.",
    input: TakeoverSchema.extend(at),
    annotations: { ...WRITE, openWorldHint: false },
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
    annotations: { ...WRITE, idempotentHint: true, openWorldHint: false },
    run: async (args, c, extra) => json(await c.request("DELETE", `${screenPath(args.box, args.screen)}/takeover`, { signal: extra.signal })),
  });

  addTool(server, {
    name: "viewer_ticket",
    title: "Make a viewer ticket",
    description: "Makes a short-lived ticket (15 minutes) for the screen's viewer socket, to watch (mode view) or drive (mode control) the desktop.",
    input: TicketSchema.extend(at),
    annotations: { ...WRITE, openWorldHint: false },
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
    input: SnapshotQuerySchema.extend({ box: BoxId }),
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
    input: z.object({ ...at, what: WidgetOpSchema }),
    annotations: WRITE,
    run: async (args, c, extra) => {
      const { box, screen, rest } = split(args);
      return json(await c.request("POST", `${screenPath(box, screen)}/desktop/node`, { body: rest.what, signal: extra.signal }));
    },
  });
}
