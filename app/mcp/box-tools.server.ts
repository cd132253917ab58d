import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { PathQuerySchema, TraceQuerySchema } from "~/protocol/api-box";
import { CreateBoxSchema } from "~/models/spec.server";
import { ExecSchema, WriteFileSchema } from "~/protocol/action-fields";
import { ADD, BoxId, type Extra, READ, WRITE, addTool, json, refusal, seg } from "./tool-kit.server";

// The box tools: lifecycle (seed 002's names: launch_box, pause_box, stop_box, resume_box,
// remove_box; seed 001's fork_box), the trace, commands and files. Each input schema is the
// route's own zod schema (its body or query) with the box id added.

const box = z.strictObject({ box: BoxId });
const boxPath = (id: string) => `/v1/boxes/${seg(id)}`;

/** Seed 002's MCP parameters for a box's lifetime, in minutes (REST placement takes seconds). */
const LaunchSchema = CreateBoxSchema.extend({
  ttl_minutes: z.number().int().min(1).max(43_200).optional().describe("Fixed lifetime in minutes (placement.expires_after_secs / 60)."),
  idle_minutes: z.number().int().min(1).max(43_200).optional().describe("Idle timeout in minutes (placement.idle_timeout_secs / 60)."),
});

/**
 * Asks the person at the client to confirm a removal, when the client can ask (elicitation):
 * `unasked` when it cannot, else what the person answered.
 */
async function askPerson(server: McpServer, id: string, extra: Extra): Promise<"unasked" | "confirmed" | "declined" | "cancelled"> {
  if (!server.server.getClientCapabilities()?.elicitation) return "unasked";
  const answer = await server.server.elicitInput(
    {
      message: `Remove box ${id}? Its desktop and files are deleted; its trace stays.`,
      requestedSchema: { type: "object", properties: { confirm: { type: "boolean", title: "Remove the box" } }, required: ["confirm"] },
    },
    { relatedRequestId: extra.requestId, signal: extra.signal },
  );
  if (answer.action === "accept") return answer.content?.confirm === true ? "confirmed" : "declined";
  return answer.action === "cancel" ? "cancelled" : "declined";
}

export function addBoxTools(server: McpServer) {
  addTool(server, {
    name: "list_boxes",
    title: "List boxes",
    description: "Lists the boxes this key can see, with their state, screens, size and viewer URL.",
    input: z.strictObject({}),
    annotations: READ,
    run: async (_a, c, extra) => json(await c.request("GET", "/v1/boxes", { signal: extra.signal })),
  });

  addTool(server, {
    name: "launch_box",
    title: "Launch a box",
    description:
      "Launches a new isolated Linux desktop with Chromium and answers the box once it is ready (or `starting` when the server queues launches). " +
      "`spec` describes the desktop (size, screens, packages, network policy), `placement` where and how long it runs. `{}` gives the defaults (1280x800, one screen, one hour).",
    input: LaunchSchema,
    annotations: { ...ADD, idempotentHint: false, openWorldHint: true },
    run: async ({ ttl_minutes, idle_minutes, ...body }, c, extra) => {
      const placement = { ...body.placement };
      if (ttl_minutes !== undefined) {
        if (placement.expires_after_secs !== undefined) return refusal("bad_request", "give ttl_minutes or placement.expires_after_secs, not both");
        placement.expires_after_secs = ttl_minutes * 60;
      }
      if (idle_minutes !== undefined) {
        if (placement.idle_timeout_secs !== undefined) return refusal("bad_request", "give idle_minutes or placement.idle_timeout_secs, not both");
        placement.idle_timeout_secs = idle_minutes * 60;
      }
      const sent = Object.keys(placement).length ? { ...body, placement } : body;
      return json(await c.request("POST", "/v1/boxes", { body: sent, signal: extra.signal }));
    },
  });

  addTool(server, {
    name: "get_box",
    title: "Get a box",
    description: "Reads one box: state (ready, paused, stopped, starting, failed, gone…), screens, size, viewer and DevTools URLs, expiry.",
    input: box,
    annotations: READ,
    run: async (a, c, extra) => json(await c.request("GET", boxPath(a.box), { signal: extra.signal })),
  });

  addTool(server, {
    name: "remove_box",
    title: "Remove a box",
    description:
      "Removes a box for good: its desktop and files are deleted (its trace stays readable). Needs `confirm: true`; " +
      "without it, a client that supports elicitation asks its person, any other is refused.",
    input: box.extend({ confirm: z.boolean().optional().describe("Must be true: removing cannot be undone.") }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    run: async (a, c, extra) => {
      const asked = a.confirm === true ? "confirmed" : await askPerson(server, a.box, extra);
      if (asked === "unasked") return refusal("bad_request", "removing a box needs confirm: true (it deletes the box and its files)");
      // The person's no is final for this call: the agent is told so, not how to get around it.
      if (asked !== "confirmed") return refusal("denied", `the person at the client ${asked} removing box ${a.box}; it was not removed`);
      return json(await c.request("DELETE", boxPath(a.box), { headers: { "x-holm-confirm-delete": "true" }, signal: extra.signal }));
    },
  });

  // Pausing and resuming lose nothing; stopping ends every process (what was open, unsaved, is lost).
  const lifecycle = [
    ["pause_box", "Pause a box", "Freezes the box: it keeps its memory, windows and ports and uses no CPU; calls to it wait until it resumes.", "pause", ADD],
    ["resume_box", "Resume a box", "Resumes a paused box as it was, or starts a stopped one with a new desktop (nothing open).", "resume", ADD],
    ["stop_box", "Stop a box", "Stops every process of the box and keeps its files; resume_box starts a new desktop.", "stop", WRITE],
  ] as const;
  for (const [name, title, description, verb, kind] of lifecycle) {
    addTool(server, {
      name,
      title,
      description,
      input: box,
      annotations: { ...kind, idempotentHint: true, openWorldHint: false },
      run: async (a, c, extra) => json(await c.request("POST", `${boxPath(a.box)}/${verb}`, { signal: extra.signal })),
    });
  }

  addTool(server, {
    name: "fork_box",
    title: "Fork a box",
    description:
      "Makes a new box from the same spec and replays the source's recorded steps (its whole trace) in it. " +
      "Answers the new box and a replay report (attempted, ok, skipped steps and why).",
    input: box,
    annotations: { ...ADD, idempotentHint: false, openWorldHint: true },
    run: async (a, c, extra) => json(await c.request("POST", `${boxPath(a.box)}/fork`, { body: {}, signal: extra.signal })),
  });

  addTool(server, {
    name: "read_trace",
    title: "Read the trace",
    description:
      "Reads a box's trace: what was done to it, in order (seq, at_ms, actor, event: created, acted steps, frames, commands, takeovers…). " +
      "Page with `after` (the `next` of the last read) and `limit` (at most 500).",
    input: TraceQuerySchema.extend({ box: BoxId }),
    annotations: READ,
    run: async ({ box: id, ...query }, c, extra) => json(await c.request("GET", `${boxPath(id)}/trace`, { query, signal: extra.signal })),
  });

  addTool(server, {
    name: "exec",
    title: "Run a command",
    description: "Runs a command in the box (argv, no shell unless you call one: [\"sh\", \"-c\", \"…\"]). Answers {code, stdout, stderr, timed_out}.",
    input: ExecSchema.extend({ box: BoxId }),
    annotations: WRITE,
    run: async ({ box: id, ...body }, c, extra) => json(await c.request("POST", `${boxPath(id)}/exec`, { body, signal: extra.signal })),
  });

  addTool(server, {
    name: "read_file",
    title: "Read a file",
    description: "Reads a file of the box. Answers {path, contents_base64}; a UTF-8 text file also comes as text.",
    input: PathQuerySchema.extend({ box: BoxId }),
    annotations: READ,
    run: async ({ box: id, ...query }, c, extra) => {
      const out = await c.request<{ contents_base64?: string }>("GET", `${boxPath(id)}/files`, { query, signal: extra.signal });
      const result = json(out);
      const textOf = utf8(out.contents_base64);
      if (textOf !== undefined) result.content.push({ type: "text", text: textOf });
      return result;
    },
  });

  addTool(server, {
    name: "write_file",
    title: "Write a file",
    description: "Writes a file in the box (contents as base64), making its directories.",
    input: WriteFileSchema.extend({ box: BoxId }),
    annotations: WRITE,
    run: async ({ box: id, ...body }, c, extra) => json(await c.request("PUT", `${boxPath(id)}/files`, { body, signal: extra.signal })),
  });

  addTool(server, {
    name: "list_files",
    title: "List a directory",
    description: "Lists a directory of the box: names, kinds, sizes.",
    input: PathQuerySchema.extend({ box: BoxId }),
    annotations: READ,
    run: async ({ box: id, ...query }, c, extra) => json(await c.request("GET", `${boxPath(id)}/files/list`, { query, signal: extra.signal })),
  });
}

/** The text of base64 bytes when they are UTF-8 without NULs (not a binary file); else undefined. */
function utf8(b64: string | undefined): string | undefined {
  if (!b64) return undefined;
  const bytes = Buffer.from(b64, "base64");
  if (bytes.length > 1024 * 1024 || bytes.includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
