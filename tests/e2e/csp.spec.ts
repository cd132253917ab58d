import { type Page, expect, test } from "@playwright/test";
import { type TestServer, json } from "../support/server";
import { serverForSpec } from "../support/spec-server";
import { signUp } from "../support/browser";

// The console's pages carry a script Content-Security-Policy (docs/decisions/0033): HTML that got
// into a page some other way than the server's own render (a box name, a trace entry, a page
// title or a webhook answer that one day escapes React's escaping) runs no script with the
// person's session. Only the server's scripts, which carry the request's nonce, and what they load
// run; normal use of the console reports no violation at all.

let server: TestServer;
serverForSpec((s) => (server = s));

// The first person, signed up by whichever test comes first on this server (a failed test's
// worker is replaced, and its new server comes with a fresh module).
let signedUp = false;
async function enter(page: Page) {
  if (signedUp) {
    await page.goto(`${server.base}/login`);
    await page.getByLabel("Email").fill("mallory@example.com");
    await page.getByLabel("Password", { exact: true }).fill("correct horse battery");
    await page.getByRole("button", { name: "Log in" }).click();
  } else {
    await page.goto(`${server.base}/signup`);
    await signUp(page, "Mallory", "mallory@example.com", "Injected");
    signedUp = true;
  }
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
}

/** Every CSP violation the page reports, in the page (kept across navigations) and on its console. */
async function watchViolations(page: Page): Promise<() => Promise<string[]>> {
  const seen: string[] = [];
  page.on("console", (m) => {
    if (/content security policy/i.test(m.text())) seen.push(`console: ${m.text()}`);
  });
  await page.exposeFunction("__cspViolation", (v: string) => void seen.push(v));
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      (window as unknown as { __cspViolation(v: string): void }).__cspViolation(
        `${e.effectiveDirective} blocked ${e.blockedURI || "inline"} at ${location.pathname} (${e.sample})`,
      );
    });
  });
  return async () => {
    // Violations are reported as events a moment after the blocked load.
    await page.waitForTimeout(300);
    return [...seen];
  };
}

test("HTML injected into a console page runs no script: not an inline handler, not a <script> in the served page", async ({ page }) => {
  const violations = await watchViolations(page);
  await enter(page);

  // An event handler in markup put into the live page (innerHTML, insertAdjacentHTML …).
  const handlerRan = await page.evaluate(async () => {
    document.body.insertAdjacentHTML("beforeend", '<img alt="" src="/no-such-picture.png" onerror="window.__pwned = 1">');
    // Listeners on the element run in the order they were added: the markup's handler first.
    const img = document.body.lastElementChild!;
    await new Promise<void>((resolve) => img.addEventListener("error", () => resolve(), { once: true }));
    return (window as unknown as { __pwned?: number }).__pwned === 1;
  });
  expect(handlerRan, "an injected onerror handler ran").toBe(false);

  // A <script> in the page as the server sent it, as a stored injection would arrive: the parser
  // meets it, without the request's nonce.
  await page.route(`${server.base}/keys`, async (route) => {
    const answer = await route.fetch();
    const html = (await answer.text()).replace("<body", '<script>window.__pwned = 2</script><body');
    await route.fulfill({ response: answer, body: html });
  });
  await page.goto(`${server.base}/keys`);
  // The page itself still came up and hydrated: its own scripts carry the nonce.
  await expect(page.getByRole("heading", { name: /API keys for Injected/ })).toBeVisible();
  await page.getByLabel("Name", { exact: true }).fill("still works");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByTestId("new-key")).toBeVisible();
  expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), "an injected <script> ran").toBeUndefined();
  await page.unroute(`${server.base}/keys`);

  // Both were stopped by the policy (not by chance): the browser reported each.
  const seen = await violations();
  expect(seen.filter((v) => /^script-src-attr/.test(v)), seen.join("\n")).toHaveLength(1);
  expect(seen.filter((v) => /^script-src-elem blocked inline at \/keys/.test(v)), seen.join("\n")).toHaveLength(1);
});

test("each page's answer has its own nonce, and the policy keeps plugins, <base> and foreign form targets out", async () => {
  const policies = [];
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${server.base}/login`);
    const html = await res.text();
    const policy = res.headers.get("content-security-policy") ?? "";
    const nonce = /'nonce-([A-Za-z0-9+/=]+)'/.exec(policy)?.[1];
    expect(nonce, policy).toBeTruthy();
    // Every script of the page carries it; none comes without.
    const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
    expect(scripts.length).toBeGreaterThan(1);
    for (const s of scripts) expect(s).toContain(`nonce="${nonce}"`);
    policies.push(policy);
  }
  expect(policies[0]).not.toBe(policies[1]);
  const directives = policies[0]!.split(";").map((d) => d.trim());
  expect(directives).toEqual(
    expect.arrayContaining([
      expect.stringMatching(/^script-src 'nonce-[A-Za-z0-9+/=]{22,}' 'strict-dynamic'$/),
      "object-src 'none'",
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ]),
  );
  expect(policies[0]).not.toMatch(/unsafe-inline|unsafe-eval/);
});

test("walking the console (box list, a box's live screen, its terminal, its trace, settings, every page) reports no CSP violation", async ({ page }) => {
  const violations = await watchViolations(page);
  await enter(page);

  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByLabel("Name", { exact: true }).fill("agent");
  await page.getByRole("button", { name: "Create key" }).click();
  const key = (await page.getByTestId("new-key").textContent())!.trim();
  const made = await fetch(`${server.base}/v1/boxes`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ spec: { desktop: { features: [] } } }),
  });
  const box = await json(made);
  expect(box.state, JSON.stringify(box)).toBe("ready");

  // The list, its live thumbnail (an <img> of this server's), then client-side navigation.
  await page.getByRole("link", { name: "Boxes" }).click();
  const row = page.getByRole("row").filter({ hasText: box.id.slice(0, 16) });
  await expect(row).toBeVisible();
  await expect(row.locator("img")).toHaveJSProperty("complete", true);
  await page.getByRole("link", { name: new RegExp(`^${box.id.slice(0, 16)}`) }).click();

  // The live screen through noVNC (the viewer relay's WebSocket) and the terminal (socket.io).
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
  // Taking the screen over and giving it back: the control socket and the shortcut hints.
  await page.getByRole("button", { name: "Take over" }).click();
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-mode", "control");
  await page.getByRole("button", { name: "Give back" }).click();
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-mode", "view");
  await page.getByText("Terminal", { exact: true }).click();
  await expect(page.getByTestId("terminal-status")).toContainText("Connected");

  await page.getByRole("link", { name: /Trace: what happened in this box/ }).click();
  await expect(page.getByRole("heading", { name: /Trace of/ })).toBeVisible();
  await expect(page.getByTestId("trace-entry").filter({ hasText: /created/ })).toBeVisible();

  // A full load of each page too (the server's render, not only the client's).
  for (const [path, heading] of [
    ["/settings", "Settings"],
    [`/boxes/${box.id}`, undefined],
    [`/boxes/${box.id}/screen?screen=0`, undefined],
    [`/boxes/${box.id}/trace`, /Trace of/],
    ["/webhooks", /Webhooks/],
    ["/members", /Members/],
    ["/keys", /API keys/],
    ["/images", "Images"],
    ["/profiles", /Browser profiles/],
  ] as const) {
    await page.goto(`${server.base}${path}`);
    if (heading) await expect(page.getByRole("heading", { name: heading }).first()).toBeVisible();
    else await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
  }
  expect(await violations()).toEqual([]);
});
