import { ApiError } from "~/utils/api-error.server";
import type { TabPage } from "./page-browser.server";
import type { ScreenTarget } from "./screen.server";

// STUB (issue 12): reading a page (markdown/text/raw), evaluate, screenshot, PDF, console,
// dialogs. Signatures are shared with page-steps.server.ts (batch steps) and the routes.

export interface ReadQuery {
  format?: "markdown" | "text" | "raw";
  limit?: number;
  max_links?: number;
}
export interface EvaluateQuery {
  expression: string;
  timeout_ms?: number;
  limit?: number;
}
export interface ShotQuery {
  full?: boolean;
  format?: "png" | "jpeg" | "webp";
  quality?: number;
  annotate?: boolean;
}
export interface PdfQuery {
  landscape?: boolean;
  no_background?: boolean;
  path?: string;
}
export interface ConsoleQuery {
  errors?: boolean;
  clear?: boolean;
  limit?: number;
}
export interface DialogAnswer {
  accept?: boolean;
  text?: string;
}

export async function readPage(_tp: TabPage, _q: ReadQuery): Promise<Record<string, unknown>> {
  throw new ApiError("unsupported", "not built yet");
}
export async function evaluate(_tp: TabPage, _q: EvaluateQuery): Promise<Record<string, unknown>> {
  throw new ApiError("unsupported", "not built yet");
}
export async function pageShot(_tp: TabPage, _q: ShotQuery): Promise<Record<string, unknown>> {
  throw new ApiError("unsupported", "not built yet");
}
export async function printPdf(_t: ScreenTarget, _tp: TabPage, _q: PdfQuery): Promise<Record<string, unknown>> {
  throw new ApiError("unsupported", "not built yet");
}
export async function readConsole(_tp: TabPage, _q: ConsoleQuery): Promise<Record<string, unknown>> {
  throw new ApiError("unsupported", "not built yet");
}
export async function answerDialog(_tp: TabPage, _a: DialogAnswer): Promise<Record<string, unknown>> {
  throw new ApiError("unsupported", "not built yet");
}
