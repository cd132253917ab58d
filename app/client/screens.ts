import type { z } from "zod";
import type { BatchResult } from "~/models/batch.server";
import type { FrameQuerySchema } from "~/models/screen.server";
import type { BatchBodySchema, ClipboardSetSchema, TakeoverSchema, TicketSchema } from "~/protocol/api-box";
import type { StepSchema } from "~/protocol/actions";
import { fromBase64 } from "./bytes";
import { type HolmClient, type Query, seg } from "./holm-client";

// One screen of a box (000: Screen, Windows, Human control). `screen` defaults to 0.

export type Step = z.input<typeof StepSchema>;
export type BatchBody = z.input<typeof BatchBodySchema>;
export type FrameQuery = z.input<typeof FrameQuerySchema>;
export type { BatchResult };

/** A frame with its PNG decoded: `png` is absent when `have` matched (`unchanged`). */
export interface Frame {
  hash: string;
  unchanged: boolean;
  png?: Uint8Array;
}

export interface ViewerTicket {
  ticket: string;
  expires_at_ms: number;
  mode: "view" | "control";
  view_socket: string;
  control_socket?: string;
  /** A box with `spec.policy.auth: "password"`: the VNC password of its direct `view_socket`. */
  password?: string;
}

const screenPath = (id: string, screen = 0) => `/v1/boxes/${seg(id)}/screens/${seg(screen)}`;

export class ScreensApi {
  constructor(private readonly c: HolmClient) {}

  /** `POST …/actions`: a batch (an array of steps is sent as `{actions}`). */
  batch(id: string, body: BatchBody | Step[], opts: { screen?: number; idempotencyKey?: string; signal?: AbortSignal } = {}): Promise<BatchResult> {
    const headers = opts.idempotencyKey ? { "idempotency-key": opts.idempotencyKey } : undefined;
    const b = Array.isArray(body) ? { actions: body } : body;
    return this.c.request<BatchResult>("POST", `${screenPath(id, opts.screen)}/actions`, { body: b, headers, signal: opts.signal });
  }

  /** `GET …/frame`, the PNG as bytes. */
  async frame(id: string, opts: { screen?: number } & FrameQuery = {}): Promise<Frame> {
    const { screen, ...query } = opts;
    const out = await this.c.request<{ hash: string; unchanged?: boolean; png_base64?: string }>("GET", `${screenPath(id, screen)}/frame`, { query: query as Query });
    const frame: Frame = { hash: out.hash, unchanged: out.unchanged === true };
    if (out.png_base64) frame.png = fromBase64(out.png_base64);
    return frame;
  }

  cursor(id: string, screen = 0): Promise<{ x: number; y: number }> {
    return this.c.request("GET", `${screenPath(id, screen)}/cursor`);
  }

  readClipboard(id: string, opts: { screen?: number; selection?: "clipboard" | "primary" } = {}): Promise<{ text: string }> {
    return this.c.request("GET", `${screenPath(id, opts.screen)}/clipboard`, { query: { selection: opts.selection } });
  }

  setClipboard(id: string, body: z.input<typeof ClipboardSetSchema>, screen = 0): Promise<Record<string, unknown>> {
    return this.c.request("PUT", `${screenPath(id, screen)}/clipboard`, { body });
  }

  windows(id: string, screen = 0): Promise<Record<string, unknown>> {
    return this.c.request("GET", `${screenPath(id, screen)}/windows`);
  }

  /** `POST …/takeover`: hands the screen to a person: {url, exclusive, screen}. */
  takeover(id: string, body: z.input<typeof TakeoverSchema> = {}, screen = 0): Promise<{ url: string; exclusive: boolean; screen: number }> {
    return this.c.request("POST", `${screenPath(id, screen)}/takeover`, { body });
  }

  /** `DELETE …/takeover`: takes the screen back. */
  giveBack(id: string, screen = 0): Promise<{ given_back: boolean; screen: number }> {
    return this.c.request("DELETE", `${screenPath(id, screen)}/takeover`);
  }

  viewers(id: string, screen = 0): Promise<{ watching: number; driving: number; person_driving: boolean; taken_over: boolean }> {
    return this.c.request("GET", `${screenPath(id, screen)}/viewers`);
  }

  /** `POST …/viewer/ticket`: a short-lived ticket and the viewer socket URLs. */
  viewerTicket(id: string, body: z.input<typeof TicketSchema> = {}, screen = 0): Promise<ViewerTicket> {
    return this.c.request<ViewerTicket>("POST", `${screenPath(id, screen)}/viewer/ticket`, { body });
  }
}
