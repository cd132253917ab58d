import { ApiError, notFound } from "~/utils/api-error.server";
import { type ConsoleEntry, type TabPage, pageState, takeDialog } from "./page-browser.server";

// What a page holds and shows, for the Pages routes and the batch steps (seed 000 "Pages": read,
// evaluate, page_shot, pdf, console, dialog). Each lives in its own file; this one is what the
// routes and page-steps.server.ts call, and holds the console and dialogs, which are the state
// page-browser.server.ts keeps per tab.

export { type ReadQuery, readPage } from "./page-content-read.server";
export { type EvaluateQuery, evaluate } from "./page-content-eval.server";
export { type PdfQuery, type ShotQuery, pageShot, printPdf } from "./page-content-shot.server";

export interface ConsoleQuery {
  errors?: boolean;
  clear?: boolean;
  limit?: number;
}

export interface DialogAnswer {
  accept?: boolean;
  text?: string;
}

/** Console messages a read answers with when no `limit` is given (the seed's example: 200). */
export const DEFAULT_CONSOLE_LIMIT = 200;
/** How long a `dialog` step waits for a dialog to open ("waits briefly", 004). */
export const DIALOG_WAIT_MS = 2000;

/**
 * The tab's console since the server attached to its browser: the newest `limit` messages (only
 * errors and uncaught exceptions with `errors`), oldest first; `clear` empties it after reading.
 */
export async function readConsole(tp: TabPage, q: ConsoleQuery): Promise<Record<string, unknown>> {
  const s = pageState(tp.page);
  const matching: ConsoleEntry[] = q.errors ? s.console.filter((m) => m.type === "error") : [...s.console];
  const limit = q.limit ?? DEFAULT_CONSOLE_LIMIT;
  const messages = matching.slice(Math.max(0, matching.length - limit));
  if (q.clear) s.console.length = 0;
  return { tab: tp.tab.id, messages, cut: matching.length > messages.length };
}

/**
 * Answers the tab's open dialog (waiting briefly for one to open): `accept` confirms (with `text`
 * as a prompt's answer), else it is dismissed. None: `not_found`, as 004's 404.
 */
export async function answerDialog(tp: TabPage, a: DialogAnswer): Promise<Record<string, unknown>> {
  const d = await takeDialog(tp.page, DIALOG_WAIT_MS);
  if (!d) throw notFound(`no dialog opened on tab ${tp.tab.id} within ${DIALOG_WAIT_MS} ms`);
  const accept = a.accept ?? false;
  try {
    if (accept) await d.dialog.accept(d.type === "prompt" ? (a.text ?? d.default_value) : undefined);
    else await d.dialog.dismiss();
  } catch (e) {
    // Closed in between (its page navigated or closed): nothing was answered.
    throw new ApiError("failed", `the ${d.type} dialog could not be answered: ${(e as Error).message.split("\n")[0]}`);
  }
  return {
    tab: tp.tab.id,
    dialog: { type: d.type, message: d.message, ...(d.type === "prompt" ? { default_value: d.default_value } : {}) },
    accepted: accept,
    ...(accept && d.type === "prompt" ? { text: a.text ?? d.default_value } : {}),
  };
}
