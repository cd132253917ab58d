import AxeBuilder from "@axe-core/playwright";
import { type Browser, type Page, expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { type TestServer, removeTestBoxes, startServer } from "../support/server";
import { attachShot } from "../support/shots";

// Every console page, as a person sees it: light and dark (the system's setting), 1440×900 and
// 390×844. On each: axe-core finds no serious or critical violation (contrast included), the
// page does not scroll sideways, and a screenshot goes into the report.

let server: TestServer;
let boxId = "";
let removedId = "";
let inviteUrl = "";
let cookies: Awaited<ReturnType<Awaited<ReturnType<Browser["newContext"]>>["cookies"]>> = [];



test.beforeAll(async ({ browser }) => {
  server = await startServer({ HOLM_SERVER_TOKEN: "" });
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${server.base}/signup`);
  await signUp(page, "Ada Lovelace", "ada@example.com", "Research");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  cookies = await context.cookies();
  const csrf = await page.locator('input[name="csrf"]').first().inputValue();
  const v1 = (path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
    page.evaluate(
      async ({ path, init, csrf }) => {
        const res = await fetch(path, {
          method: init.method ?? "GET",
          headers: { "content-type": "application/json", "x-holm-csrf": csrf, ...(init.headers ?? {}) },
          body: init.body === undefined ? undefined : JSON.stringify(init.body),
        });
        return { status: res.status, body: await res.json() };
      },
      { path, init, csrf },
    );
  const made = await v1("/v1/boxes", { method: "POST", body: {} });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  boxId = made.body.id;
  await v1(`/v1/boxes/${boxId}/screens/0/actions`, {
    method: "POST",
    body: { actions: [{ type: "open_url", url: "data:text/html,<h1>Hello</h1>", target: "current" }, { type: "wait", ms: 300 }] },
  });
  const other = await v1("/v1/boxes", { method: "POST", body: {} });
  removedId = other.body.id;
  await v1(`/v1/boxes/${removedId}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
  await page.goto(`${server.base}/members`);
  await page.getByLabel("Email").fill("vic@example.com");
  await page.getByRole("button", { name: "Create invitation" }).click();
  inviteUrl = (await page.getByTestId("invite-link").first().textContent())!.trim();
  await context.close();
});

test.afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const PAGES: { name: string; path: () => string; signedIn: boolean; ready?: (p: Page) => Promise<void> }[] = [
  { name: "log in", path: () => "/login", signedIn: false },
  { name: "sign up (invited)", path: () => new URL(inviteUrl).pathname, signedIn: false },
  { name: "boxes", path: () => "/", signedIn: true },
  {
    name: "box",
    path: () => `/boxes/${boxId}`,
    signedIn: true,
    ready: (p) => expect(p.getByTestId("vnc")).toHaveAttribute("data-state", "connected"),
  },
  { name: "trace", path: () => `/boxes/${boxId}/trace`, signedIn: true, ready: (p) => expect(p.getByTestId("trace-entry").first()).toBeVisible() },
  { name: "removed box", path: () => `/boxes/${removedId}`, signedIn: true },
  { name: "members", path: () => "/members", signedIn: true },
  { name: "keys", path: () => "/keys", signedIn: true },
  { name: "settings", path: () => "/settings", signedIn: true },
  { name: "images", path: () => "/images", signedIn: true },
  { name: "new workspace", path: () => "/workspaces/new", signedIn: true },
  { name: "not found", path: () => "/no-such-page", signedIn: true },
];

// Each scheme once and each width once: contrast follows the scheme and sideways scroll the width,
// so light at 1440 px and dark at 390 px catch both (all four pairings took 5 of the whole
// suite's 30 minutes). HOLM_TEST_A11Y_ALL=1 runs all four.
const PAIRS = process.env.HOLM_TEST_A11Y_ALL === "1"
  ? (["light", "dark"] as const).flatMap((scheme) => [1440, 390].map((width) => ({ scheme, width })))
  : [{ scheme: "light" as const, width: 1440 }, { scheme: "dark" as const, width: 390 }];
for (const { scheme, width } of PAIRS) {
  {
    const size = width === 1440 ? { width: 1440, height: 900 } : { width: 390, height: 844 };
    test(`every page in ${scheme} at ${size.width}px: no serious axe violation, no sideways scroll`, async ({ browser }, info) => {
      const problems: string[] = [];
      for (const p of PAGES) {
        const context = await browser.newContext({ colorScheme: scheme, viewport: size });
        if (p.signedIn) await context.addCookies(cookies);
        const page = await context.newPage();
        await page.goto(`${server.base}${p.path()}`);
        await p.ready?.(page);
        await page.waitForLoadState("networkidle").catch(() => undefined);
        const dark = await page.evaluate(() => matchMedia("(prefers-color-scheme: dark)").matches);
        expect(dark).toBe(scheme === "dark");
        // The page follows the setting: a dark page behind light text, or the other way round.
        // Read from the computed colours' text, not through a canvas (a canvas under heavy load
        // once read back all zeros): rgb() through its sRGB luminance, oklch() as L³ (the
        // luminance of a grey of that lightness; the console's colours are near-grey).
        const measure = () => page.evaluate(() => {
          const lum = (c: string) => {
            const n = (c.match(/-?[\d.]+%?/g) ?? []).map((v) => (v.endsWith("%") ? parseFloat(v) / 100 : parseFloat(v)));
            if (c.startsWith("oklch")) return n[0]! ** 3;
            const lin = (v: number) => ((v /= 255) <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
            if (c.startsWith("rgb") && (n[3] ?? 1) > 0) return 0.2126 * lin(n[0]!) + 0.7152 * lin(n[1]!) + 0.0722 * lin(n[2]!);
            return Number.NaN;
          };
          const body = getComputedStyle(document.body);
          const bg = body.backgroundColor;
          const fg = body.color;
          return { bg: lum(bg), fg: lum(fg), raw: `${bg} on ${document.styleSheets.length} stylesheet(s), text ${fg}` };
        });
        // Measured until it holds (bounded): a page still applying its stylesheet reads as
        // unstyled black on transparent for a moment.
        const follows = (t: { bg: number; fg: number }) => (scheme === "dark" ? t.bg < 0.2 && t.fg > 0.8 : t.bg > 0.9 && t.fg < 0.2);
        let tone = await measure();
        for (let i = 0; i < 40 && !follows(tone); i++) {
          await page.waitForTimeout(250);
          tone = await measure();
        }
        if (!follows(tone)) {
          // Twice in full runs under heavy load a page came up with no styles at all (one
          // stylesheet in the document, none of its rules applied; cause not found). Say what the
          // stylesheet's fetch looked like, then load the page again: once is a note, twice fails.
          const sheets = await page.evaluate(() => ({
            rules: [...document.styleSheets].map((sh) => `${sh.href?.split("/").pop() ?? "inline"}: ${(() => { try { return sh.cssRules.length; } catch { return "unreadable"; } })()} rules`),
            fetched: (performance.getEntriesByType("resource") as PerformanceResourceTiming[])
              .filter((e) => e.name.endsWith(".css"))
              .map((e) => `${e.name.split("/").pop()} status ${e.responseStatus} ${e.encodedBodySize} B in ${Math.round(e.duration)} ms`),
          }));
          const first = `${p.name}: not ${scheme} (background ${tone.bg.toFixed(2)}, text ${tone.fg.toFixed(2)}: ${tone.raw}; ${sheets.rules.join(", ")}; fetched ${sheets.fetched.join(", ") || "no stylesheet"})`;
          await page.reload();
          await p.ready?.(page);
          tone = await measure();
          for (let i = 0; i < 40 && !follows(tone); i++) {
            await page.waitForTimeout(250);
            tone = await measure();
          }
          if (follows(tone)) console.warn(`[a11y] unstyled once, styled after a reload: ${first}`);
          else problems.push(first);
        }
        const wide = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
        if (wide.scroll > wide.client) problems.push(`${p.name}: the page is ${wide.scroll} px wide in a ${wide.client} px window`);
        const axe = await new AxeBuilder({ page }).analyze();
        for (const v of axe.violations) {
          if (v.impact !== "serious" && v.impact !== "critical") continue;
          const where = v.nodes.slice(0, 3).map((n) => `${n.target.join(" ")}: ${n.failureSummary?.split("\n").slice(1, 2).join("")}`);
          problems.push(`${p.name}: ${v.id} (${v.impact}) ${v.help}\n    ${where.join("\n    ")}`);
        }
        await attachShot(page, info, `${p.name} · ${scheme} · ${size.width}px`, { fullPage: true });
        await context.close();
      }
      expect(problems, problems.join("\n")).toEqual([]);
    });
  }
}

test("the first Tab on a console page offers 'Skip to content', which takes the keyboard past the header", async ({ browser }) => {
  const context = await browser.newContext();
  await context.addCookies(cookies);
  const page = await context.newPage();
  await page.goto(`${server.base}/keys`);
  const skip = page.getByRole("link", { name: "Skip to content" });
  await page.keyboard.press("Tab");
  await expect(skip).toBeFocused();
  await expect(skip).toBeVisible();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("main")).toBeFocused();
  // The next Tab lands in the page, not on the header's workspace switcher.
  await page.keyboard.press("Tab");
  expect(await page.evaluate(() => !!document.activeElement?.closest("main"))).toBe(true);
  await context.close();
});
