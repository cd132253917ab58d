import { ApiError } from "~/utils/api-error.server";
import type { Step } from "./action-schema.server";
import { answerDialog, evaluate, pageShot, readPage } from "./page-content.server";
import { type TabMemo, pageOf as tabPage } from "./page-browser.server";
import { elementOp, findElements, snapshot } from "./page-element.server";
import type { ScreenTarget } from "./screen.server";

// The batch steps that work on a page by element (seed 000 "Pages": on_page, look, snapshot,
// read, evaluate, page_shot, dialog). The server runs them through Playwright
// (page-browser.server.ts), between the parts of the batch the agent runs, in the batch's order.

export const PAGE_STEPS: ReadonlySet<string> = new Set(["on_page", "look", "snapshot", "read", "evaluate", "page_shot", "dialog"]);

export const isPageStep = (s: { type: string }): boolean => PAGE_STEPS.has(s.type);

/**
 * Runs one page step on the batch's screen; the front tab unless the step names one. `memo` keeps
 * the screen's tab listing from one page step to the next (the batch drops it after agent parts).
 */
export async function runPageStep(t: ScreenTarget, step: Step, memo?: TabMemo): Promise<Record<string, unknown>> {
  const pageOf = (tab?: string | null) => tabPage(t, tab, memo);
  switch (step.type) {
    case "on_page":
      return elementOp(await pageOf(), step.what, { owner: t.box.owner, box: t.box });
    case "look": {
      const { tab, query, ...rest } = step.what;
      return findElements(await pageOf(tab), { query, ...rest });
    }
    case "snapshot": {
      const { tab, ...rest } = step.what ?? {};
      return snapshot(await pageOf(tab), rest);
    }
    case "read": {
      const { tab, ...rest } = step.what ?? {};
      return readPage(await pageOf(tab), rest);
    }
    case "evaluate":
      return evaluate(await pageOf(), step.what);
    case "page_shot": {
      const { tab, ...rest } = step.what ?? {};
      return pageShot(await pageOf(tab), rest);
    }
    case "dialog":
      return answerDialog(await pageOf(), { accept: step.accept, text: step.text });
    default:
      throw new ApiError("internal", `${step.type} is not a page step`);
  }
}
