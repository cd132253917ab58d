// Over 400 lines: one table row per /v1 operation, the single source of the OpenAPI document; split by tag it would hide which operations exist.
import type { z } from "zod";
import { ArrangeSchema, ExecSchema, GrepSchema, WaitWindowSchema, WriteFileSchema } from "~/models/action-schema.server";
import { CookieQuery, SetCookiesSchema } from "~/models/browser-cookies.server";
import { LoadSchema, SaveSchema } from "~/models/browser-state.server";
import { ForkSchema } from "~/models/fork.server";
import { ImageBuildSchema } from "~/models/image.server";
import { RuntimeCreateSchema, RuntimePatchSchema } from "~/models/runtime-store.server";
import { FrameQuerySchema } from "~/models/screen.server";
import { CreateBoxSchema } from "~/models/spec.server";
import {
  AppsSchema,
  BatchBodySchema,
  BoxPatchSchema,
  CdpQuerySchema,
  ClipboardQuerySchema,
  ClipboardSetSchema,
  EventsQuerySchema,
  GlobQuerySchema,
  PathQuerySchema,
  RecordingStartSchema,
  SecretPutSchema,
  TakeoverSchema,
  TicketSchema,
  TraceQuerySchema,
} from "~/protocol/api-box";
import {
  ConsoleBodySchema,
  ElementQuerySchema,
  EvaluateBodySchema,
  FindQuerySchema,
  PdfBodySchema,
  ReadQuerySchema,
  ShotBodySchema,
  SnapshotQuerySchema,
  TabQuerySchema,
} from "~/protocol/api-page";
import { ElementOpSchema, WidgetOpSchema } from "~/protocol/page-actions";
import type { ErrorCode } from "~/protocol/errors";
import { DeliveriesQuerySchema, ReplayBodySchema, WebhookCreateSchema, WebhookPatchSchema, WebhookRotateSchema } from "~/protocol/api-webhook";
import { browserQuerySchema } from "./browser-route.server";

// The operations of /v1, one row each: the single source of GET /v1/openapi.json
// (openapi.server.ts). Each row names the very zod schemas its route validates with (the route
// imports the same export), so the document cannot describe a body the route does not check.
// tests/unit/openapi.test.ts fails when a route of app/routes.ts has no row here or a row names
// a path or method no route serves; tests/integration/openapi.test.ts sends each row's example
// with an unknown key to the live route and expects the 400 the schema gives.

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface Operation {
  method: Method;
  /** The OpenAPI path template: `/v1/boxes/{id}`. */
  path: string;
  /** operationId, and the client method it maps to. */
  id: string;
  tag: string;
  summary: string;
  description?: string;
  query?: z.ZodType;
  body?: z.ZodType;
  /** A body the route accepts: the drift tests add an unknown key to it. */
  example?: unknown;
  /** A success that is not JSON: its media type (the route's content-type) and what it is. */
  binary?: { type: "image/png" | "video/mp4"; about: string };
  /** The JSON success's schema when it is not an object (Chromium's `/json` is an array). */
  answer?: Record<string, unknown>;
  /** Error codes beyond the ones every operation of its kind can answer. */
  errors?: ErrorCode[];
  /** Served without the bearer token (000: health; the CDP token routes). */
  open?: true;
  /** Takes an `idempotency-key` header (000, Conventions). */
  idempotent?: true;
  /** Can answer 202 with a `starting` box (queued jobs), or what else its 202 means. */
  accepted?: true | string;
  /** Headers the route needs, by name, with what they mean. */
  headers?: Record<string, string>;
  /** A route of the contract this server does not build yet: it answers 400 `unsupported`. */
  notBuilt?: true;
}

const BOX = "/v1/boxes/{id}";
const SCREEN = `${BOX}/screens/{screen}`;
const WINDOW = `${SCREEN}/windows/{window}`;

type Row = Omit<Operation, "method" | "path" | "id"> & { op: `${Method} ${string}`; id: string };
const rows: Row[] = [
  { op: "GET /v1/health", id: "health", tag: "health", summary: 'Returns {"ok": true, "service": "holm-server"}.', open: true },
  { op: "GET /v1/openapi.json", id: "openapi", tag: "health", summary: "This document (OpenAPI 3.1), generated from the routes' zod schemas.", open: true },
  // Boxes
  { op: "GET /v1/boxes", id: "listBoxes", tag: "boxes", summary: "List boxes: {boxes}." },
  {
    op: "POST /v1/boxes",
    id: "createBox",
    tag: "boxes",
    summary: "Create a box; answers the box (202 and `starting` when jobs are queued).",
    body: CreateBoxSchema,
    example: { spec: { desktop: { width: 1280, height: 800 } }, placement: { expires_after_secs: 3600 }, metadata: { name: "checkout flow" } },
    idempotent: true,
    accepted: true,
    errors: ["unsupported", "unavailable"],
  },
  { op: `GET ${BOX}`, id: "getBox", tag: "boxes", summary: "Get one box; a fork's also has `replay`: {total, attempted, ok, done, stopped_at, truncated, skipped}, its replay so far." },
  {
    op: `PATCH ${BOX}`,
    id: "updateBox",
    tag: "boxes",
    summary: "holm's: set the box's name (null clears it), replace its labels, and/or record its screens while a person holds them; answers the box.",
    description: "Not in the seed. Names are 1–80 characters; at most 16 labels, keys like `team` or `ci.run/id`, values up to 128 characters. `record_takeovers: true` records a screen at 10 fps from each takeover to its give-back, into the trace (needs the `video` feature, else `400 unsupported`).",
    body: BoxPatchSchema,
    example: { name: "checkout flow", labels: { team: "web" } },
  },
  {
    op: `DELETE ${BOX}`,
    id: "removeBox",
    tag: "boxes",
    summary: "Remove a box (its trace stays).",
    headers: { "x-holm-confirm-delete": "Must be `true`." },
  },
  { op: `POST ${BOX}/pause`, id: "pauseBox", tag: "boxes", summary: "Pause the box." },
  { op: `POST ${BOX}/resume`, id: "resumeBox", tag: "boxes", summary: "Resume a paused or stopped box." },
  { op: `POST ${BOX}/stop`, id: "stopBox", tag: "boxes", summary: "Stop the box and keep its files." },
  { op: `POST ${BOX}/apps`, id: "installApps", tag: "boxes", summary: "Install catalog applications.", body: AppsSchema, example: { apps: ["gimp"] } },
  {
    op: `POST ${BOX}/fork`,
    id: "forkBox",
    tag: "boxes",
    summary: "Make a new box from the trace: {box, replay}.",
    body: ForkSchema,
    example: { up_to: 40 },
    idempotent: true,
    accepted: true,
  },
  { op: "GET /v1/catalog", id: "catalog", tag: "boxes", summary: "The application names of the catalog: {apps}." },
  // Runtimes and images (ADR 0017). Changes to runtimes and image removal: the server token or
  // the server's administrator.
  { op: "GET /v1/runtimes", id: "listRuntimes", tag: "runtimes", summary: "The runtimes, the built-in one first: {runtimes}. Secrets show as the names set (`secrets_set`), never values." },
  {
    op: "POST /v1/runtimes",
    id: "createRuntime",
    tag: "runtimes",
    summary: "Add a runtime (provider `docker` with `fields.host` tcp:// and TLS secrets ca, cert, key, or ssh:// with `fields.host_key` (the host's public key or SHA256 fingerprint, required) and secrets ssh_key, optional ssh_passphrase; provider `swarm` with a manager's tcp:// `fields.host`, optional `engine_port` and `constraints`, and the same TLS secrets). Other providers: 400 `unsupported`.",
    body: RuntimeCreateSchema,
    example: { name: "edge", provider: "docker", fields: { host: "ssh://holm@engine.example", host_key: "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s" }, secrets: { ssh_key: "-----BEGIN OPENSSH PRIVATE KEY-----\n…\n-----END OPENSSH PRIVATE KEY-----\n" } },
    errors: ["unsupported", "denied"],
  },
  { op: "GET /v1/runtimes/{name}", id: "getRuntime", tag: "runtimes", summary: "One runtime, with its capabilities under `can`." },
  {
    op: "PATCH /v1/runtimes/{name}",
    id: "patchRuntime",
    tag: "runtimes",
    summary: "Change fields or secrets (a secret set to null is removed). Refused while a box uses it.",
    body: RuntimePatchSchema,
    example: { fields: { host: "ssh://holm@engine.example" } },
    errors: ["denied"],
  },
  { op: "DELETE /v1/runtimes/{name}", id: "deleteRuntime", tag: "runtimes", summary: "Remove a runtime. Refused while a box uses it.", errors: ["denied"] },
  {
    op: "POST /v1/runtimes/{name}/image",
    id: "buildImage",
    tag: "runtimes",
    summary: "Build the image for a spec before a box needs it: {runtime, image, spec_digest, digest}.",
    body: ImageBuildSchema,
    example: { spec: { desktop: { features: [] } } },
    accepted: "Queued: `state: building` and an empty `image`; read …/images/{digest} until `state` is gone (built) or `failed`.",
    errors: ["unsupported", "denied", "failed", "unavailable"],
  },
  { op: "GET /v1/runtimes/{name}/images", id: "listRuntimeImages", tag: "runtimes", summary: "The images built for a runtime: {images}." },
  { op: "GET /v1/runtimes/{name}/images/{digest}", id: "getImage", tag: "runtimes", summary: "One image: `state` is `building` (with `progress`) or `failed` (with `reason`), absent when built." },
  { op: "DELETE /v1/runtimes/{name}/images/{digest}", id: "deleteImage", tag: "runtimes", summary: "Remove an image. Refused while a box uses it or it is being built.", errors: ["denied"] },
  { op: "GET /v1/images", id: "listImages", tag: "runtimes", summary: "Every image the server built: {images}." },
  // Screen
  {
    op: `POST ${SCREEN}/actions`,
    id: "batch",
    tag: "screen",
    summary: "Run a batch of actions: {results, stopped_at, frame?, cursor?, windows, tabs, …}.",
    body: BatchBodySchema,
    example: { actions: [{ type: "wait", ms: 10 }] },
    idempotent: true,
    errors: ["failed", "screen_unavailable"],
  },
  { op: `GET ${SCREEN}/frame`, id: "frame", tag: "screen", summary: "A screenshot: {hash, unchanged, png_base64}.", query: FrameQuerySchema },
  { op: `GET ${SCREEN}/cursor`, id: "cursor", tag: "screen", summary: "The pointer position." },
  { op: `GET ${SCREEN}/clipboard`, id: "readClipboard", tag: "screen", summary: "Read the clipboard.", query: ClipboardQuerySchema },
  { op: `PUT ${SCREEN}/clipboard`, id: "setClipboard", tag: "screen", summary: "Set the clipboard.", body: ClipboardSetSchema, example: { text: "hi" } },
  { op: `GET ${SCREEN}/recording`, id: "recordingStatus", tag: "screen", summary: "The recording state." },
  { op: `POST ${SCREEN}/recording`, id: "startRecording", tag: "screen", summary: "Start a recording.", body: RecordingStartSchema, example: { fps: 12 } },
  { op: `DELETE ${SCREEN}/recording`, id: "stopRecording", tag: "screen", summary: "Stop the recording; answers the file's path in the box." },
  // Windows
  { op: `GET ${SCREEN}/windows`, id: "listWindows", tag: "windows", summary: "List windows." },
  { op: `GET ${SCREEN}/windows/active`, id: "activeWindow", tag: "windows", summary: "The window that receives keyboard input." },
  { op: `POST ${SCREEN}/windows/wait`, id: "waitWindow", tag: "windows", summary: "Wait for a window.", body: WaitWindowSchema, example: { class: "xterm", within_ms: 10 } },
  { op: `DELETE ${WINDOW}`, id: "closeWindow", tag: "windows", summary: "Close a window." },
  { op: `POST ${WINDOW}/focus`, id: "focusWindow", tag: "windows", summary: "Bring a window to the front." },
  { op: `POST ${WINDOW}/arrange`, id: "arrangeWindow", tag: "windows", summary: "Move or resize a window.", body: ArrangeSchema, example: { how: "maximise" } },
  // Native widgets
  {
    op: `POST ${SCREEN}/desktop/node`,
    id: "desktopNode",
    tag: "windows",
    summary: "One native widget operation, through AT-SPI: tree, find, focus, invoke, set.",
    body: WidgetOpSchema,
    example: { op: "find", node: { query: "Street", role: "text" } },
    errors: ["failed", "not_found", "unsupported"],
  },
  // Human control
  {
    op: `POST ${SCREEN}/takeover`,
    id: "takeover",
    tag: "human-control",
    summary: "Give the screen to a person: {url, exclusive, screen}.",
    body: TakeoverSchema,
    example: { shared: false },
  },
  {
    op: `GET ${SCREEN}/viewer/socket`,
    id: "viewerSocket",
    tag: "human-control",
    summary: "The viewer WebSocket (RFB, for noVNC), through the server: send Upgrade: websocket. No bearer token: the ticket is the credential.",
    description: "Query: `ticket` (from …/viewer/ticket) and `mode`, `view` (default) or `control`. A refusal is a plain HTTP answer before the upgrade; once open, the server ends a connection with a close code of 4000–4999 saying why.",
    errors: ["unauthorized"],
    open: true,
  },
  { op: `DELETE ${SCREEN}/takeover`, id: "giveBack", tag: "human-control", summary: "Take the screen back." },
  { op: `GET ${SCREEN}/viewers`, id: "viewers", tag: "human-control", summary: "{watching, driving, person_driving, taken_over}." },
  {
    op: `POST ${SCREEN}/viewer/ticket`,
    id: "viewerTicket",
    tag: "human-control",
    summary: "A short-lived ticket for the viewer socket: {ticket, expires_at_ms, mode, view_socket, control_socket?, password?}.",
    description: "For a box with `spec.policy.auth` `token`, `view_socket` and `control_socket` go to the box directly (its published port, a ticket the box checks); with `password`, `view_socket` goes to the box (VNC authentication with `password`, watching only) and `control_socket` through the server.",
    body: TicketSchema,
    example: { mode: "view" },
  },
  // Files and commands
  { op: `POST ${BOX}/exec`, id: "exec", tag: "files", summary: "Run a command: {code, stdout, stderr, timed_out}.", body: ExecSchema, example: { argv: ["true"] } },
  { op: `GET ${BOX}/files`, id: "readFile", tag: "files", summary: "Read a file: {path, contents_base64}.", query: PathQuerySchema },
  { op: `PUT ${BOX}/files`, id: "writeFile", tag: "files", summary: "Write a file.", body: WriteFileSchema, example: { path: "/tmp/a.txt", contents_base64: "aGk=" } },
  { op: `GET ${BOX}/files/list`, id: "listFiles", tag: "files", summary: "List a directory.", query: PathQuerySchema },
  { op: `POST ${BOX}/files/grep`, id: "grep", tag: "files", summary: "Search in files.", body: GrepSchema, example: { pattern: "root", path: "/etc" } },
  { op: `GET ${BOX}/files/glob`, id: "glob", tag: "files", summary: "Find files by name.", query: GlobQuerySchema },
  // Pages
  { op: `GET ${BOX}/pages`, id: "listTabs", tag: "pages", summary: "Every screen's tabs: {tabs}." },
  { op: `DELETE ${BOX}/pages/{tab}`, id: "closeTab", tag: "pages", summary: "Close a tab." },
  { op: `POST ${BOX}/pages/{tab}/focus`, id: "focusTab", tag: "pages", summary: "Bring a tab to the front." },
  { op: `GET ${BOX}/page`, id: "readPage", tag: "pages", summary: "Read the page: {url, title, format, content, links, cut}.", query: ReadQuerySchema },
  { op: `GET ${BOX}/page/find`, id: "findElements", tag: "pages", summary: "Find elements.", query: FindQuerySchema },
  { op: `GET ${BOX}/page/snapshot`, id: "snapshot", tag: "pages", summary: "The page's controls, with refs.", query: SnapshotQuerySchema },
  {
    op: `POST ${BOX}/page/element`,
    id: "element",
    tag: "pages",
    summary: "One element operation.",
    query: ElementQuerySchema,
    body: ElementOpSchema,
    example: { op: "focus", query: "Search" },
    errors: ["failed"],
  },
  {
    op: `POST ${BOX}/page/evaluate`,
    id: "evaluate",
    tag: "pages",
    summary: "Run JavaScript in the page.",
    query: TabQuerySchema,
    body: EvaluateBodySchema,
    example: { expression: "document.title" },
    errors: ["failed"],
  },
  { op: `POST ${BOX}/page/screenshot`, id: "pageShot", tag: "pages", summary: "Capture the page.", body: ShotBodySchema, example: { format: "png" } },
  { op: `POST ${BOX}/page/pdf`, id: "pdf", tag: "pages", summary: "Print the page.", query: TabQuerySchema, body: PdfBodySchema, example: { landscape: false } },
  { op: `POST ${BOX}/page/console`, id: "pageConsole", tag: "pages", summary: "Read the console.", query: TabQuerySchema, body: ConsoleBodySchema, example: { errors: true } },
  // Browser state
  { op: `POST ${BOX}/state/save`, id: "saveState", tag: "browser-state", summary: "Save cookies and storage.", query: browserQuerySchema(), body: SaveSchema, example: { name: "work" } },
  { op: `POST ${BOX}/state/load`, id: "loadState", tag: "browser-state", summary: "Load a saved state.", query: browserQuerySchema(), body: LoadSchema, example: { name: "work" } },
  { op: "GET /v1/states", id: "listStates", tag: "browser-state", summary: "The saved names: {states}." },
  { op: "DELETE /v1/states/{name}", id: "deleteState", tag: "browser-state", summary: "Remove a saved name." },
  { op: "GET /v1/profiles", id: "listProfiles", tag: "browser-state", summary: "Browser profiles (placement.profile): {profiles}, each with the box holding it (held_by), its size when a box last let it go (size_bytes, null until measured; one over HOLM_PROFILE_MAX_BYTES is refused at launch, 409) and whether its data is missing from the engine (data_missing)." },
  { op: "DELETE /v1/profiles/{name}", id: "deleteProfile", tag: "browser-state", summary: "Remove a browser profile and its files; 409 while a box holds it or another container uses its volume." },
  { op: `GET ${BOX}/cookies`, id: "listCookies", tag: "browser-state", summary: "List cookies: {cookies}.", query: browserQuerySchema(CookieQuery) },
  {
    op: `POST ${BOX}/cookies`,
    id: "setCookies",
    tag: "browser-state",
    summary: "Set cookies: {set, expired}.",
    query: browserQuerySchema(),
    body: SetCookiesSchema,
    example: { url: "https://example.com", cookies: [{ name: "a", value: "b" }] },
  },
  { op: `DELETE ${BOX}/cookies`, id: "clearCookies", tag: "browser-state", summary: "Clear cookies: {cleared}.", query: browserQuerySchema(CookieQuery) },
  // Chrome DevTools: the token routes take no bearer (the token in the path is the credential).
  {
    op: `POST ${BOX}/cdp`,
    id: "createCdp",
    tag: "cdp",
    summary: "A CDP address with a short-lived token (member role): {url, ws_url, expires_at_ms}. `url` for Playwright connectOverCDP, `ws_url` for Puppeteer.",
    query: CdpQuerySchema,
  },
  ...(["GET", "POST", "PUT", "PATCH", "DELETE"] as const).flatMap((m): Row[] => [
    {
      op: `${m} /v1/cdp/{token}/json`,
      id: `cdpJson${m[0]}${m.slice(1).toLowerCase()}`,
      tag: "cdp",
      summary: "Chromium's DevTools HTTP endpoint, through the server: the targets, as `/json/list`.",
      // Chromium answers `/json` with the target list, an array.
      answer: { type: "array", items: { type: "object" } },
      open: true,
    },
    {
      op: `${m} /v1/cdp/{token}/json/{rest}`,
      id: `cdpJsonRest${m[0]}${m.slice(1).toLowerCase()}`,
      tag: "cdp",
      summary: "Chromium's DevTools HTTP endpoints (`version`, `list`, `new?<url>`, `activate/<target>`, `close/<target>`), through the server; addresses in answers point back through it.",
      // `list` is an array, `version` and `new` objects, `activate` and `close` a line of text.
      answer: {},
      open: true,
    },
  ]),
  {
    op: "GET /v1/cdp/{token}/devtools/{rest}",
    id: "cdpDevtools",
    tag: "cdp",
    summary: "The DevTools WebSocket (`browser/<id>`, `page/<id>`): send Upgrade: websocket. During a person's exclusive takeover, input and navigation commands answer a CDP error.",
    open: true,
  },
  // Secrets (holm's, for 004's secret_ref)
  { op: "GET /v1/secrets", id: "listSecrets", tag: "secrets", summary: "Secret names and dates, never values: {secrets}." },
  { op: "PUT /v1/secrets/{name}", id: "putSecret", tag: "secrets", summary: "Set a secret (write-only).", body: SecretPutSchema, example: { value: "s3cret" } },
  { op: "DELETE /v1/secrets/{name}", id: "deleteSecret", tag: "secrets", summary: "Remove a secret." },
  // Webhooks (holm's, issue 16; docs/decisions/0018)
  { op: "GET /v1/webhooks", id: "listWebhooks", tag: "webhooks", summary: "The workspace's webhooks, never their secrets: {webhooks}. Member role." },
  {
    op: "POST /v1/webhooks",
    id: "createWebhook",
    tag: "webhooks",
    summary: "Make a webhook; the answer has its `secret`, the only time it is given.",
    description:
      "Deliveries are POSTs of the event as GET /v1/events shows it, signed: `Holm-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, \"<t>.<body>\")>`, with `Holm-Event-Id` (the event's seq, for dedupe), `Holm-Event-Kind` and `Holm-Delivery-Id`. A target on a loopback, private, link-local or other non-public address is refused (400) unless the administrator sets HOLM_WEBHOOK_ALLOW_PRIVATE=1.",
    body: WebhookCreateSchema,
    example: { url: "https://hooks.example.com/holm", events: ["box.created", "box.ready"] },
    errors: ["denied"],
  },
  { op: "GET /v1/webhooks/{id}", id: "getWebhook", tag: "webhooks", summary: "One webhook." },
  { op: "PATCH /v1/webhooks/{id}", id: "updateWebhook", tag: "webhooks", summary: "Change its url, events or enabled.", body: WebhookPatchSchema, example: { enabled: false } },
  { op: "DELETE /v1/webhooks/{id}", id: "deleteWebhook", tag: "webhooks", summary: "Delete a webhook and its delivery log." },
  {
    op: "POST /v1/webhooks/{id}/secret",
    id: "rotateWebhookSecret",
    tag: "webhooks",
    summary: "Rotate the signing secret: the answer has the new `secret`, the only time it is given.",
    description:
      "The previous secret goes on signing beside the new one for `grace_secs` (default 86400): `Holm-Signature: t=…,v1=<new>,v1=<previous>`, so a receiver accepts a delivery when any v1 matches its secret and can switch without refusing one. `rotation_ends_at_ms` says when the previous one stops; `grace_secs: 0` drops it at once.",
    body: WebhookRotateSchema,
    example: { grace_secs: 86400 },
  },
  {
    op: "GET /v1/webhooks/{id}/deliveries",
    id: "listWebhookDeliveries",
    tag: "webhooks",
    summary: "The delivery log, newest first: {deliveries}, each with status (pending, delivered, failed), attempts, last_status, latency_ms, error, next_attempt_at_ms.",
    query: DeliveriesQuerySchema,
  },
  {
    op: "POST /v1/webhooks/{id}/deliveries/{delivery}/replay",
    id: "replayWebhookDelivery",
    tag: "webhooks",
    summary: "Send the same event again now, as a new delivery (`replay_of` names the old).",
    description: "While a delivery of that event to that webhook is still `pending`, the answer is that one (nothing new is queued). A webhook makes at most 30 replays an hour; then `409 denied`, retryable.",
    body: ReplayBodySchema,
    example: {},
    errors: ["denied"],
  },
  // History and events
  {
    op: `GET ${BOX}/trace`,
    id: "trace",
    tag: "history",
    summary: "Read the trace: {entries, next}.",
    description:
      "Not in the seed: a screen's browser that quit (its last tab closed) and that the box started again on a blank tab is a `browser_restarted` entry (actor `server`, its `screen`, `data.quits_in_minute`; `data.after_pause: true` when it was started again after a pause); a quit that paused the restarts, after more than 5 in a minute, is a `browser_paused` entry (`data.quits_in_minute`, `data.restart_in_s`). The server reads them from the box's log: at its next sweep (HOLM_SERVER_REAP_SECS) or when the trace is read, each once.",
    query: TraceQuerySchema,
  },
  { op: `GET ${BOX}/trace/frames/{hash}`, id: "traceFrame", tag: "history", summary: "A frame the trace refers to.", binary: { type: "image/png", about: "The frame, a PNG." } },
  {
    op: `GET ${BOX}/trace/recordings`,
    id: "traceRecordings",
    tag: "history",
    summary: "The screen recordings the trace keeps, oldest first: {recordings}, each with id, screen, fps, started_at_ms, stopped_at_ms, duration_ms, bytes and path (where it was in the box).",
  },
  {
    op: `GET ${BOX}/trace/recordings/{rid}`,
    id: "traceRecording",
    tag: "history",
    summary: "A kept recording (`recording` of a recording_stopped entry). Honours Range.",
    binary: { type: "video/mp4", about: "The recording, an MP4 (H.264)." },
  },
  {
    op: "GET /v1/events",
    id: "events",
    tag: "events",
    summary: "Read events in order: {events, next, more}.",
    description:
      "Not in the seed: `screen.browser_restarted` (a screen's browser quit and the box started it again; `data.screen`, `data.quits_in_minute` or `data.after_pause`) and `screen.browser_paused` (its restarts paused after too many quits in a minute; `data.screen`, `data.quits_in_minute`, `data.restart_in_s`), as the trace's `browser_restarted` and `browser_paused` entries.",
    query: EventsQuerySchema,
  },
  // Scheduled work: GET and POST alike, with the server token or CRON_SECRET.
  ...(["reap", "prune", "run"] as const).flatMap((job) =>
    (["GET", "POST"] as const).map((m): Row => ({ op: `${m} /v1/jobs/${job}`, id: `${m.toLowerCase()}Jobs${job[0]!.toUpperCase()}${job.slice(1)}`, tag: "jobs", summary: `The ${job} job.` })),
  ),
];

export const OPERATIONS: readonly Operation[] = rows.map(({ op, ...rest }) => {
  const [method, path] = op.split(" ") as [Method, string];
  return { method, path, ...rest };
});

/** A route of the contract not built yet, as app/routes/v1/not-built-list.ts lists it. */
export interface NotBuiltEntry {
  path: string;
  methods: readonly Method[];
  open?: true;
}

/** The React Router pattern of a /v1 route (`v1/boxes/:id`) as an OpenAPI path (`/v1/boxes/{id}`). */
export const openApiPath = (pattern: string) => `/${pattern.replace(/^\/+/, "")}`.replace(/:(\w+)/g, "{$1}");

/**
 * The not-built routes as operations (400 `unsupported` until built). A splat (`…/json/*`) has
 * no OpenAPI path template, so it is left out here and listed under `x-holm-not-built`.
 */
export function notBuiltOperations(list: readonly NotBuiltEntry[]): Operation[] {
  return list
    .filter((r) => !r.path.endsWith("*"))
    .flatMap((r) =>
      r.methods.map((method) => ({
        method,
        path: openApiPath(r.path),
        id: `notBuilt_${method.toLowerCase()}_${r.path.replace(/^v1\//, "").replace(/[^a-z0-9]+/gi, "_")}`,
        tag: "not-built",
        summary: "Part of the contract, not built on this server yet: answers 400 `unsupported`.",
        notBuilt: true as const,
        ...(r.open ? { open: true as const } : {}),
      })),
    );
}
