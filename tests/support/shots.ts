import type { Page, TestInfo } from "@playwright/test";

// Screenshots attached to the Playwright report (playwright-report/index.html), so a person
// reviewing a run sees what each console test saw; the files stay in the test's folder under
// test-results/ too.

export async function attachShot(page: Page, info: TestInfo, name: string, opts: { fullPage?: boolean } = {}) {
  const file = info.outputPath(`${name.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}.png`);
  await page.screenshot({ path: file, fullPage: opts.fullPage ?? false, animations: "disabled" });
  await info.attach(name, { path: file, contentType: "image/png" });
}

/** Fails the test if the page ever opens a native alert/confirm/prompt (the console asks in-page). */
export function refuseNativeDialogs(page: Page) {
  page.on("dialog", (d) => {
    void d.dismiss();
    throw new Error(`a native ${d.type()} dialog opened: ${d.message()}`);
  });
}
