import type { z } from "zod";
import type { ExecSchema } from "~/models/action-schema.server";
import type { BoxJson } from "~/models/box-record.server";
import type { ForkSchema, ReplayReport } from "~/models/fork.server";
import type { CreateBoxSchema } from "~/models/spec.server";
import type { AppsSchema, BoxPatchSchema } from "~/protocol/api-box";
import type { ForkReplay } from "~/protocol/fork-replay";
import { type HolmClient, HolmApiError, seg } from "./holm-client";

// Boxes (000: Boxes; Files and commands for exec): typed from the zod schemas the routes
// validate with, so a changed route schema is a type error here.

export type Box = BoxJson;
/** GET /v1/boxes/{id}: a fork's also has holm's `replay`, its replay so far. */
export type BoxDetail = Box & { devtools_url?: string; replay?: ForkReplay };
export type CreateBox = z.input<typeof CreateBoxSchema>;
export type ForkBody = z.input<typeof ForkSchema>;
export type BoxPatch = z.input<typeof BoxPatchSchema>;
export type ExecBody = z.input<typeof ExecSchema>;
export interface ExecResult {
  code: number | null;
  stdout: string;
  stderr: string;
  timed_out: boolean;
}
export interface ForkResult {
  box: Box;
  replay: ReplayReport;
}

/** How long create/fork wait for a box that answers `starting` (queued jobs, a cold image). */
const READY_WAIT_MS = 10 * 60_000;

export interface WaitOptions {
  /** Called with the box each time it is read while it starts (progress). */
  onProgress?: (box: Box, elapsedMs: number) => void;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export class BoxesApi {
  constructor(private readonly c: HolmClient) {}

  async list(): Promise<Box[]> {
    return (await this.c.request<{ boxes: Box[] }>("GET", "/v1/boxes")).boxes;
  }

  /** `POST /v1/boxes`. With `wait`, reads the box until it leaves `starting` (a `failed` box throws). */
  async create(body: CreateBox = {}, opts: { idempotencyKey?: string; wait?: boolean } & WaitOptions = {}): Promise<Box> {
    const headers = opts.idempotencyKey ? { "idempotency-key": opts.idempotencyKey } : undefined;
    const box = await this.c.request<Box>("POST", "/v1/boxes", { body, headers, signal: opts.signal });
    return opts.wait ? this.waitUntilSettled(box, opts) : box;
  }

  get(id: string, signal?: AbortSignal): Promise<BoxDetail> {
    return this.c.request<BoxDetail>("GET", `/v1/boxes/${seg(id)}`, { signal });
  }

  /** `PATCH /v1/boxes/{id}` (holm's): `name` (null clears it) and/or `labels` (replacing the set). */
  update(id: string, body: BoxPatch): Promise<Box> {
    return this.c.request<Box>("PATCH", `/v1/boxes/${seg(id)}`, { body });
  }

  /** Removes the box (the call is the confirmation: it sends `x-holm-confirm-delete: true`). */
  remove(id: string): Promise<Box> {
    return this.c.request<Box>("DELETE", `/v1/boxes/${seg(id)}`, { headers: { "x-holm-confirm-delete": "true" } });
  }

  pause(id: string): Promise<Box> {
    return this.c.request<Box>("POST", `/v1/boxes/${seg(id)}/pause`);
  }

  resume(id: string): Promise<Box> {
    return this.c.request<Box>("POST", `/v1/boxes/${seg(id)}/resume`);
  }

  stop(id: string): Promise<Box> {
    return this.c.request<Box>("POST", `/v1/boxes/${seg(id)}/stop`);
  }

  installApps(id: string, body: z.input<typeof AppsSchema>): Promise<Record<string, unknown>> {
    return this.c.request("POST", `/v1/boxes/${seg(id)}/apps`, { body });
  }

  /**
   * `POST …/cdp`: a CDP address with a short-lived token. Give `url` to Playwright's
   * connectOverCDP, `ws_url` to Puppeteer's connect({browserWSEndpoint}).
   */
  cdp(id: string, query: { ttl_secs?: number; screen?: string } = {}): Promise<{ url: string; ws_url: string; expires_at_ms: number }> {
    return this.c.request("POST", `/v1/boxes/${seg(id)}/cdp`, { query });
  }

  catalog(): Promise<{ apps: string[] }> {
    return this.c.request("GET", "/v1/catalog");
  }

  /** `POST …/fork` (`up_to`, `placement`). With `wait`, reads the new box until it leaves `starting`. */
  async fork(id: string, body: ForkBody = {}, opts: { idempotencyKey?: string; wait?: boolean } & WaitOptions = {}): Promise<ForkResult> {
    const headers = opts.idempotencyKey ? { "idempotency-key": opts.idempotencyKey } : undefined;
    const out = await this.c.request<ForkResult>("POST", `/v1/boxes/${seg(id)}/fork`, { body, headers, signal: opts.signal });
    return opts.wait ? { ...out, box: await this.waitUntilSettled(out.box, opts) } : out;
  }

  /** `POST …/exec`: runs argv in the box; a command that exits non-zero is still a success here. */
  exec(id: string, body: ExecBody): Promise<ExecResult> {
    return this.c.request<ExecResult>("POST", `/v1/boxes/${seg(id)}/exec`, { body });
  }

  /** Reads the box until it is no longer `starting`; a `failed` box is an error (`failed`, its reason). */
  async waitUntilSettled(box: Box, opts: WaitOptions = {}): Promise<Box> {
    const started = Date.now();
    const deadline = started + (opts.timeoutMs ?? READY_WAIT_MS);
    let cur = box;
    for (let delay = 250; cur.state === "starting"; delay = Math.min(delay * 1.5, 2000)) {
      opts.onProgress?.(cur, Date.now() - started);
      if (Date.now() > deadline) throw new HolmApiError(504, "timeout", `box ${cur.id} is still starting after ${Math.round((Date.now() - started) / 1000)} s`, true);
      await sleep(delay, opts.signal);
      cur = await this.get(cur.id, opts.signal);
    }
    if (cur.state === "failed") throw new HolmApiError(422, "failed", `box ${cur.id} failed to start${cur.reason ? `: ${cur.reason}` : ""}`, false);
    return cur;
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
