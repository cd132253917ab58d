import { decodePng } from "../support/png";
import { type Browser, type Page, expect, test } from "@playwright/test";
import { Page as BoxPage } from "../support/cdp";
import { type TestServer, execIn, json, removeTestBoxes, startServer } from "../support/server";
import { signUp } from "../support/browser";

// The console's box page against a real box: the live screen matches the box's own frame, a
// person takes over and clicks and types into the box through the canvas, sends text to its
// clipboard, gives the screen back to the agent, uses the terminal; the viewer reconnects by
// itself when the server goes away and comes back; a viewer watches without control.

let server: TestServer;
let key = "";
let boxId = "";
let inviteLink = "";
let cdp: BoxPage | undefined;

// A page in the box: a big coloured block to recognise, a button that counts clicks, a text box.
const BOX_PAGE = `<!doctype html><html><body style="margin:0;background:#1e3a8a">
<div id="block" style="position:absolute;left:0;top:0;width:100%;height:45%;background:rgb(230,40,140)"></div>
<button id="b" style="position:absolute;left:80px;top:55%;width:320px;height:140px;font-size:28px;background:rgb(40,200,90)">Click me</button>
<input id="t" style="position:absolute;left:480px;top:55%;width:420px;height:60px;font-size:28px" autocomplete="off">
<script>window.clicks = 0; b.addEventListener("click", () => { window.clicks++; b.textContent = "Clicked " + window.clicks; });</script>
</body></html>`;

test.beforeAll(async () => {
  // `local` keeps sessions in a file, so the page's session survives the restart below.
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
});

test.afterAll(async () => {
  cdp?.close();
  await server?.stop();
  await removeTestBoxes();
});

test.describe.configure({ mode: "serial" });

const v1 = (path: string, init: RequestInit & { json?: unknown } = {}) => server.api(path, init);
const asKey = (path: string, body?: unknown, method = body === undefined ? "GET" : "POST") =>
  fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
const viewers = async () => json(await v1(`/v1/boxes/${boxId}/screens/0/viewers`));

// ------------------------------------------------------------------ pixels


type Region = { x: number; y: number; w: number; h: number };

function meanOfPng(img: ReturnType<typeof decodePng>, r: Region): number[] {
  const sum = [0, 0, 0];
  for (let y = r.y; y < r.y + r.h; y++) {
    for (let x = r.x; x < r.x + r.w; x++) {
      const px = img.rgb(x, y);
      for (let k = 0; k < 3; k++) sum[k]! += px[k]!;
    }
  }
  return sum.map((s) => s / (r.w * r.h));
}

/** Mean colour of a region of the noVNC canvas (at framebuffer resolution). */
function meanOfCanvas(page: Page, r: Region): Promise<number[]> {
  return page.evaluate((r) => {
    const c = document.querySelector<HTMLCanvasElement>("[data-testid=vnc] canvas");
    if (!c || c.width === 0) return [-1, -1, -1];
    const d = c.getContext("2d")!.getImageData(r.x, r.y, r.w, r.h).data;
    const sum = [0, 0, 0];
    for (let i = 0; i < d.length; i += 4) for (let k = 0; k < 3; k++) sum[k]! += d[i + k]!;
    return sum.map((s) => s / (d.length / 4));
  }, r);
}

const close = (a: number[], b: number[], tol = 12) => a.every((v, i) => Math.abs(v - b[i]!) <= tol);

async function frame(): Promise<ReturnType<typeof decodePng>> {
  const f = await json(await v1(`/v1/boxes/${boxId}/screens/0/frame`));
  return decodePng(Buffer.from(f.png_base64, "base64"));
}

/** Clicks the page at a point of the box's screen, through the scaled canvas. */
async function clickBoxAt(page: Page, at: { x: number; y: number }) {
  const box = await page.locator("[data-testid=vnc] canvas").evaluate((c: HTMLCanvasElement) => {
    const r = c.getBoundingClientRect();
    return { left: r.left, top: r.top, sx: r.width / c.width, sy: r.height / c.height };
  });
  await page.mouse.click(box.left + at.x * box.sx, box.top + at.y * box.sy);
}

// ------------------------------------------------------------------ the tests

test("a member sees the live screen, takes over, clicks, types, pastes, gives back", async ({ page, context }) => {
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  await page.goto(server.base);
  await signUp(page, "Ada", "ada@example.com", "Research");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();

  // A key made in the console launches a box, as an agent would.
  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByLabel("Name", { exact: true }).fill("agent");
  await page.getByRole("button", { name: "Create key" }).click();
  key = (await page.getByTestId("new-key").textContent())!.trim();
  const res = await asKey("/v1/boxes", { spec: { desktop: { width: 1280, height: 800 } } });
  const box = await json(res);
  expect(box.state, JSON.stringify(box)).toBe("ready");
  boxId = box.id;

  // Something distinctive on the screen, put there by an agent batch.
  const url = `data:text/html;base64,${Buffer.from(BOX_PAGE).toString("base64")}`;
  const opened = await asKey(`/v1/boxes/${boxId}/screens/0/actions`, { actions: [{ type: "open_url", url, target: "current" }] });
  expect(opened.status, await opened.clone().text()).toBe(200);
  cdp = await BoxPage.open(server, boxId);
  await expect.poll(() => cdp!.evaluate("typeof window.clicks"), { timeout: 20_000 }).toBe("number");

  // The box page, reached from the list.
  await page.getByRole("link", { name: "Boxes" }).click();
  await page.getByRole("link", { name: new RegExp(boxId.slice(0, 16)) }).click();
  await expect(page).toHaveURL(new RegExp(`/boxes/${boxId}$`));
  await expect(page.getByTestId("box-state").first()).toHaveText("ready");
  await expect(page.getByText(/expires in (59|60)m/).first()).toBeVisible();
  const vnc = page.getByTestId("vnc");
  await expect(vnc).toHaveAttribute("data-state", "connected");
  await expect(vnc).toHaveAttribute("data-mode", "view");
  await expect(page.getByTestId("control-banner")).toContainText("The agent has control");
  await expect(page.getByTestId("screen-counters")).toHaveText("1 watching · 0 driving");

  // The canvas shows what the box's own frame shows: the block, the button, the background.
  const shot = await frame();
  expect(shot.width).toBe(1280);
  const block = await cdp.centre("#block");
  const button = await cdp.centre("#b");
  const regions: Region[] = [
    { x: block.x - 200, y: block.y - 40, w: 400, h: 80 },
    { x: button.x - 100, y: button.y - 30, w: 200, h: 60 },
    { x: 1000, y: 700, w: 200, h: 60 },
  ];
  for (const r of regions) {
    const want = meanOfPng(shot, r);
    await expect.poll(() => meanOfCanvas(page, r).then((got) => close(got, want)), { timeout: 15_000 }).toBe(true);
  }
  expect(close(meanOfPng(shot, regions[0]!), [230, 40, 140], 20)).toBe(true);

  // Take over: exclusive, so the agent's input waits.
  await page.getByRole("button", { name: "Take over" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("You have control");
  await expect(vnc).toHaveAttribute("data-mode", "control");
  await expect(vnc).toHaveAttribute("data-state", "connected");
  await expect.poll(async () => (await viewers()).driving).toBe(1);
  expect(await viewers()).toMatchObject({ driving: 1, taken_over: true, watching: 1 });
  await expect(page.getByTestId("screen-counters")).toHaveText("1 watching · 1 driving");
  const refused = await asKey(`/v1/boxes/${boxId}/screens/0/actions`, { actions: [{ type: "click", at: button }] });
  expect(refused.status).toBe(409);

  // A click through the canvas reaches the page in the box.
  await clickBoxAt(page, button);
  await expect.poll(() => cdp!.evaluate("window.clicks"), { timeout: 10_000 }).toBe(1);

  // So does the keyboard, once the screen has focus.
  await clickBoxAt(page, await cdp.centre("#t"));
  await expect.poll(() => cdp!.evaluate("document.activeElement && document.activeElement.id")).toBe("t");
  await page.keyboard.type("typed-here 42");
  await expect.poll(() => cdp!.evaluate("document.getElementById('t').value")).toBe("typed-here 42");

  // The clipboard: text from the console lands in the box's clipboard.
  await page.getByLabel("Text for the box").fill("from-the-console-7");
  await page.getByRole("button", { name: "Send to box clipboard" }).click();
  await expect
    .poll(async () => (await json(await v1(`/v1/boxes/${boxId}/screens/0/clipboard`))).text, { timeout: 10_000 })
    .toBe("from-the-console-7");
  await expect(page.getByRole("status").filter({ hasText: "Sent" })).toBeVisible();
  // x11vnc sees the new clipboard and tells the viewer, which shows it.
  await expect(page.getByTestId("box-clipboard")).toHaveText("from-the-console-7");
  // And it pastes in the box.
  await clickBoxAt(page, await cdp.centre("#t"));
  await page.keyboard.press("Control+a");
  await page.keyboard.press("Control+v");
  await expect.poll(() => cdp!.evaluate("document.getElementById('t').value")).toBe("from-the-console-7");

  // Give back: the viewer watches again and the agent drives again.
  await page.getByRole("button", { name: "Give back" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("The agent has control");
  await expect(vnc).toHaveAttribute("data-mode", "view");
  await expect(vnc).toHaveAttribute("data-state", "connected");
  await expect.poll(async () => (await viewers()).driving).toBe(0);
  expect(await viewers()).toMatchObject({ driving: 0, taken_over: false });
  const ok = await asKey(`/v1/boxes/${boxId}/screens/0/actions`, { actions: [{ type: "click", at: button }] });
  expect(ok.status, await ok.clone().text()).toBe(200);
  await expect.poll(() => cdp!.evaluate("window.clicks")).toBe(2);
  await expect(page.getByRole("button", { name: "Clicked 2" })).toHaveCount(0); // the box's page, not the console's
  // In view mode a click on the canvas reaches nothing.
  await clickBoxAt(page, button);
  await page.waitForTimeout(500);
  expect(await cdp.evaluate("window.clicks")).toBe(2);
});

test("the terminal runs a shell in the box and the trace records the session", async ({ page }) => {
  await logIn(page, "ada@example.com");
  await page.goto(`${server.base}/boxes/${boxId}`);
  await page.getByText("Terminal", { exact: true }).click();
  await expect(page.getByTestId("terminal-status")).toContainText("Connected");
  // Typed only once bash shows its prompt: keys that arrive while it sets up its line editor are
  // dropped by the terminal's mode change (seen on a loaded machine: "echo hel" lost).
  await expect(page.locator(".xterm-rows")).toContainText(/root@\S+:.*# ?/);
  await page.getByTestId("terminal").click();
  await page.keyboard.type("echo hello-$((6*7))");
  await page.keyboard.press("Enter");
  await expect(page.locator(".xterm-rows")).toContainText("hello-42");
  // The shell is in the box: it sees the box's id and display.
  await page.keyboard.type('echo "$HOLM_BOX_ID:$DISPLAY"');
  await page.keyboard.press("Enter");
  await expect(page.locator(".xterm-rows")).toContainText(`${boxId}::99`);
  await page.keyboard.type("exit");
  await page.keyboard.press("Enter");
  await expect(page.getByTestId("terminal-status")).toContainText("Closed");
  await expect(page.getByRole("button", { name: "New session" })).toBeVisible();

  await expect
    .poll(async () => {
      const trace = await json(await v1(`/v1/boxes/${boxId}/trace?limit=500`));
      return trace.entries.filter((e: any) => e.event === "terminal").map((e: any) => e.data.phase);
    })
    .toEqual(["opened", "closed"]);
  const trace = await json(await v1(`/v1/boxes/${boxId}/trace?limit=500`));
  const closed = trace.entries.find((e: any) => e.event === "terminal" && e.data.phase === "closed");
  expect(closed.actor).toBe("person");
  expect(closed.data.by).toMatch(/^user:/);
  expect(closed.data.duration_ms).toBeGreaterThan(0);
  // Never the keystrokes.
  expect(JSON.stringify(trace.entries)).not.toContain("hello-");

  // A page that goes away ends its shell, even one busy with a command.
  await page.getByRole("button", { name: "New session" }).click();
  await expect(page.getByTestId("terminal-status")).toContainText("Connected");
  await page.getByTestId("terminal").click();
  await page.keyboard.type("sleep 777");
  await page.keyboard.press("Enter");
  await expect.poll(async () => (await execIn(boxId, ["pgrep", "-f", "sleep 777"])).code).toBe(0);
  await page.close();
  await expect.poll(async () => (await execIn(boxId, ["pgrep", "-f", "sleep 777"])).code, { timeout: 15_000 }).toBe(1);
  await expect
    .poll(async () => {
      const t = await json(await v1(`/v1/boxes/${boxId}/trace?limit=500`));
      return t.entries.filter((e: any) => e.event === "terminal").map((e: any) => e.data.phase);
    })
    .toEqual(["opened", "closed", "opened", "closed"]);
});

test("the viewer reconnects by itself after the server goes away, and the box keeps its state", async ({ page }) => {
  await logIn(page, "ada@example.com");
  await page.goto(`${server.base}/boxes/${boxId}`);
  const vnc = page.getByTestId("vnc");
  await expect(vnc).toHaveAttribute("data-state", "connected");
  const startedAt = await cdp!.evaluate<number>("performance.timeOrigin");
  let tickets = 0;
  page.on("request", (r) => {
    if (r.url().includes(`/boxes/${boxId}/ticket?`)) tickets++;
  });

  // The browser goes offline and comes back: a fresh ticket, a new connection.
  await page.context().setOffline(true);
  await expect(vnc).toHaveAttribute("data-state", "waiting");
  await page.context().setOffline(false);
  await expect(vnc).toHaveAttribute("data-state", "connected");
  expect(tickets).toBe(1);

  // The server goes away and comes back (same state directory, so the session survives).
  await server.stop();
  await expect(vnc).toHaveAttribute("data-state", /waiting|connecting/);
  await expect(page.getByText(/Reconnecting/)).toBeVisible();
  server = await server.restart();
  await expect(vnc).toHaveAttribute("data-state", "connected", { timeout: 30_000 });
  expect(tickets).toBeGreaterThan(1);
  await expect.poll(async () => (await viewers()).watching).toBe(1);
  // Same page in the box, same clicks: nothing in the box restarted.
  expect(await cdp!.evaluate<number>("performance.timeOrigin")).toBe(startedAt);
  expect(await cdp!.evaluate("window.clicks")).toBe(2);
});

test("a viewer watches the screen but has no control and no terminal", async ({ page, browser }: { page: Page; browser: Browser }) => {
  await logIn(page, "ada@example.com");
  await page.goto(`${server.base}/members`);
  await page.getByLabel("Email").fill("vic@example.com");
  await page.getByLabel("Role", { exact: true }).selectOption("viewer");
  await page.getByRole("button", { name: "Create invitation" }).click();
  inviteLink = (await page.getByTestId("invite-link").textContent())!.trim();

  const context = await browser.newContext();
  const vic = await context.newPage();
  await vic.goto(inviteLink);
  await signUp(vic, "Vic", "vic@example.com");
  await expect(vic.getByText("Isolated desktops in Research")).toBeVisible();
  await vic.goto(`${server.base}/boxes/${boxId}`);
  const vnc = vic.getByTestId("vnc");
  await expect(vnc).toHaveAttribute("data-state", "connected");
  await expect(vnc).toHaveAttribute("data-mode", "view");
  const r = { x: 100, y: 100, w: 200, h: 60 };
  const want = meanOfPng(await frame(), r);
  await expect.poll(() => meanOfCanvas(vic, r).then((got) => close(got, want)), { timeout: 15_000 }).toBe(true);
  await expect(vic.getByRole("button", { name: "Take over" })).toHaveCount(0);
  await expect(vic.getByText("Terminal", { exact: true })).toHaveCount(0);
  await expect(vic.getByRole("button", { name: "Remove" })).toHaveCount(0);

  // Ada takes over: Vic's banner names her, live.
  await page.goto(`${server.base}/boxes/${boxId}`);
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
  await page.getByRole("button", { name: "Take over" }).click();
  await expect(vic.getByTestId("control-banner")).toContainText("Ada has control");
  await expect(vic.getByTestId("screen-counters")).toHaveText("2 watching · 1 driving");
  await page.getByRole("button", { name: "Give back" }).click();
  await expect(vic.getByTestId("control-banner")).toContainText("The agent has control");

  // The server refuses what the page does not offer.
  const ticket = await vic.request.get(`${server.base}/boxes/${boxId}/ticket?screen=0&mode=control`);
  expect(ticket.status()).toBe(409);
  expect((await ticket.json()).code).toBe("denied");
  const csrf = await vic.locator("input[name=csrf]").first().inputValue();
  const take = await vic.request.post(`${server.base}/boxes/${boxId}`, { form: { intent: "takeover", screen: "0", csrf } });
  expect(take.status()).toBe(400);
  expect(await take.text()).toContain("needs the member role");
  // The workspace's id: the value of the switcher's current workspace.
  await vic.getByRole("button", { name: /^Workspace: / }).click();
  const workspace = (await vic.getByRole("list", { name: "Your workspaces" }).locator("button[aria-current=true]").getAttribute("value"))!;
  await vic.keyboard.press("Escape");
  const term = await vic.evaluate(
    ({ box, workspace }) =>
      new Promise<string>((resolve) => {
        // socket.io's client is bundled into the page; a raw engine.io handshake is enough here.
        const ws = new WebSocket(`${location.origin.replace("http", "ws")}/socket.io/?EIO=4&transport=websocket`);
        ws.onmessage = (e) => {
          const m = String(e.data);
          if (m.startsWith("0")) ws.send(`40/terminal,${JSON.stringify({ box, workspace })}`);
          else if (m.startsWith("44/terminal")) resolve(m);
          else if (m.startsWith("40/terminal")) resolve(m);
        };
        setTimeout(() => resolve("timeout"), 10_000);
      }),
    { box: boxId, workspace },
  );
  expect(term).toContain("44/terminal");
  expect(term).toContain("viewer");
  await context.close();
});

test("a box with two screens: a picker, and each screen in its own viewer", async ({ page }) => {
  await logIn(page, "ada@example.com");
  const two = await json(await asKey("/v1/boxes", { spec: { desktop: { width: 1024, height: 768, screens: 2 } } }));
  expect(two.state, JSON.stringify(two)).toBe("ready");
  await page.goto(`${server.base}/boxes/${two.id}`);
  const picker = page.getByRole("navigation", { name: "Screens" });
  await expect(picker.getByRole("link", { name: "Screen 0" })).toHaveAttribute("aria-current", "page");
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
  await picker.getByRole("link", { name: "Screen 1" }).click();
  await expect(page).toHaveURL(/\?screen=1$/);
  await expect(picker.getByRole("link", { name: "Screen 1" })).toHaveAttribute("aria-current", "page");
  const vnc = page.getByTestId("vnc");
  await expect(vnc).toHaveAttribute("data-screen", "1");
  await expect(vnc).toHaveAttribute("data-state", "connected");
  await expect.poll(async () => (await json(await v1(`/v1/boxes/${two.id}/screens/1/viewers`))).watching).toBe(1);
  expect((await json(await v1(`/v1/boxes/${two.id}/screens/0/viewers`))).watching).toBe(0);
  // Taking over screen 1 leaves screen 0 to the agent.
  await page.getByRole("button", { name: "Take over" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("You have control");
  await expect.poll(async () => (await json(await v1(`/v1/boxes/${two.id}/screens/1/viewers`))).taken_over).toBe(true);
  expect((await json(await v1(`/v1/boxes/${two.id}/screens/0/viewers`))).taken_over).toBe(false);
  await page.getByRole("button", { name: "Give back" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("The agent has control");
  await v1(`/v1/boxes/${two.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
});

test("pause and resume from the page; removing the box leaves a removed state with a link to its trace", async ({ page }) => {
  await logIn(page, "ada@example.com");
  await page.goto(`${server.base}/boxes/${boxId}`);
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
  await page.getByRole("button", { name: "Pause" }).click();
  await expect(page.getByTestId("box-state").first()).toHaveText("paused");
  await expect(page.getByText("The box is paused. Resume it to see the screen.")).toBeVisible();
  await page.getByRole("button", { name: "Resume" }).click();
  await expect(page.getByTestId("box-state").first()).toHaveText("ready");
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
  // The page asks in a dialog of its own that names the box; Cancel keeps it.
  await page.getByRole("button", { name: "Remove", exact: true }).click();
  const ask = page.getByRole("dialog", { name: /^Remove box_/ });
  await expect(ask).toBeVisible();
  await ask.getByRole("button", { name: "Cancel" }).click();
  await expect(ask).toBeHidden();
  await expect(page.getByTestId("box-state").first()).toHaveText("ready");
  await page.getByRole("button", { name: "Remove", exact: true }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Remove box" }).click();
  await expect(page.getByRole("heading", { name: "This box was removed" })).toBeVisible();
  await expect(page.getByRole("link", { name: "See its trace" })).toHaveAttribute("href", `/boxes/${boxId}/trace`);
  const missing = await page.goto(`${server.base}/boxes/box_0123456789abcdef0123456789abcdef`);
  expect(missing?.status()).toBe(404);
});

async function logIn(page: Page, email: string) {
  await page.goto(`${server.base}/login`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: /log in/i }).click();
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
}
