import type { z } from "zod";
import type { ElementOpSchema } from "~/protocol/page-actions";
import { ApiError } from "~/utils/api-error.server";
import type { TabPage } from "./page-browser.server";

// STUB (issue 12): element operations, snapshots with refs, find. Signatures are shared with
// page-steps.server.ts (batch steps) and the routes; keep them.

export type ElementOp = z.infer<typeof ElementOpSchema>;

export interface ElementOpOptions {
  /** Wait this long after the operation before reading what changed. */
  settle_ms?: number;
  /** The workspace whose secrets a `secret_ref` names (the box's owner; null: the server's). */
  owner: string | null;
}

export interface SnapshotQuery {
  scope?: string;
  limit?: number;
  delta?: boolean | string | number;
  quiet_ms?: number;
}

export interface FindQuery {
  query: string;
  limit?: number;
  scroll?: boolean;
  exact?: boolean;
  role?: string;
}

export async function elementOp(_tp: TabPage, _op: ElementOp, _opts: ElementOpOptions): Promise<Record<string, unknown>> {
  throw new ApiError("unsupported", "not built yet");
}

export async function snapshot(_tp: TabPage, _q: SnapshotQuery): Promise<Record<string, unknown>> {
  throw new ApiError("unsupported", "not built yet");
}

export async function findElements(_tp: TabPage, _q: FindQuery): Promise<Record<string, unknown>> {
  throw new ApiError("unsupported", "not built yet");
}
