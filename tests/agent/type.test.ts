// Typing into a real xterm: every character must arrive, including ones the keymap lacks,
// through XTEST (with keycode remapping) and through the xdotool fallback.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { batch, cleanup, display, startAgent, startXterm, startXvfb, until, type Agent } from "./harness";

const D = display(152);
let agent: Agent;
let fallback: Agent;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-type-"));

beforeAll(async () => {
  await startXvfb(D);
  agent = await startAgent({ HOLM_DISPLAY_BASE: String(D) });
  fallback = await startAgent({ HOLM_DISPLAY_BASE: String(D), HOLM_AGENT_INPUT: "xdotool" });
});
afterAll(cleanup);

/** Opens a fresh xterm whose shell copies what it is typed into `file`, and focuses it. */
async function terminal(a: Agent, name: string): Promise<string> {
  return (await xterm(a, name, true)).file;
}

/**
 * `cooked`: the tty's line editing (BackSpace erases) and Return as \n, but a line reaches the
 * file only when it ends, and one over 4,095 bytes loses characters. Otherwise every character
 * reaches the file as xterm sends it (Return still arrives as \n). No echo: the screen stays calm.
 */
async function xterm(a: Agent, name: string, cooked = false): Promise<{ file: string; pid: number }> {
  const file = path.join(dir, `${name}.txt`);
  fs.writeFileSync(file, "");
  const stty = cooked ? "-echo" : "-echo -icanon min 1";
  const proc = startXterm(D, ["-u8", "-geometry", "200x50+0+0", "-title", name, "-e", "sh", "-c", `stty ${stty}; exec cat > '${file}'`]);
  await until(async () => (await batch(a, 0, { actions: [{ type: "windows" }] })).windows.find((w: { title: string }) => w.title === name), "xterm");
  // No window manager here: click into it to give it the focus.
  await batch(a, 0, { actions: [{ type: "click", at: { x: 300, y: 200 } }] });
  await new Promise((r) => setTimeout(r, 200));
  return { file, pid: proc.pid! };
}

const TRICKY = `héllo $(rm -rf /) \`id\` "dq" 'sq' \\back ; | & > < * ? ~ ! # % ^ { } [ ] 中文字 😀👍🏽 ñ ü ß € ©\ttab\n`;

function thousand(): string {
  const base = TRICKY;
  let s = "";
  while (Array.from(s).length < 1000) s += base;
  const cps = Array.from(s).slice(0, 999);
  return cps.join("") + "\n";
}

/** `n` distinct CJK characters (none is on Xvfb's layout), then a newline; `from` shifts the block. */
function distinctCjk(n: number, from = 0): string {
  let text = "";
  for (let i = 0; i < n; i++) text += String.fromCodePoint(0x4e00 + from + i);
  return text + "\n";
}

/** How many times the heavy typing tests repeat: a few in `npm test`, 20 in `npm run test:stress`. */
const REPEAT = Number(process.env.HOLM_TEST_REPEAT ?? 2);

async function typedInto(file: string, expected: string, ms = 10_000): Promise<string> {
  const want = Buffer.byteLength(expected);
  await until(() => fs.statSync(file).size >= want, `${want} bytes in ${file}`, ms);
  await new Promise((r) => setTimeout(r, 100));
  return fs.readFileSync(file, "utf8");
}

describe("type through XTEST", () => {
  it("types 1,000 characters, off-keymap ones included, all arriving", async () => {
    const file = await terminal(agent, "xtest-1000");
    const text = thousand();
    expect(Array.from(text).length).toBe(1000);
    const r = await batch(agent, 0, { actions: [{ type: "type", text, delay_ms: 0 }] });
    expect(r.results[0]).toMatchObject({ ok: true, typed: 1000, via: "xtest" });
    expect(await typedInto(file, text)).toBe(text);
  });

  it("recycles spare keycodes when a text needs more distinct off-keymap characters than there are", async () => {
    const file = await terminal(agent, "xtest-many");
    // 400 distinct CJK characters: more than Xvfb's spare keycodes, so mappings are reused.
    let text = "";
    for (let i = 0; i < 400; i++) text += String.fromCodePoint(0x4e00 + i * 7);
    text += "\n";
    const r = await batch(agent, 0, { actions: [{ type: "type", text }] });
    expect(r.results[0].ok).toBe(true);
    expect(await typedInto(file, text)).toBe(text);
  });

  it(`types 2,000 distinct characters outside the layout, ${REPEAT} times, each character as asked`, { timeout: 600_000 }, async () => {
    const { file } = await xterm(agent, "xtest-2000");
    let expected = "";
    for (let round = 0; round < REPEAT; round++) {
      // Another block each round, so every round remaps keycodes that the last one used.
      const text = distinctCjk(2000, (round % 4) * 2000);
      const r = await batch(agent, 0, { actions: [{ type: "type", text }] });
      expect(r.results[0], JSON.stringify(r.results[0])).toMatchObject({ ok: true, typed: 2001 });
      expected += text;
      const got = await typedInto(file, expected, 60_000);
      expect(got.length, `round ${round}`).toBe(expected.length);
      // On a mismatch, say where: the index and what came instead of what.
      const [g, e] = [[...got], [...expected]];
      const at = g.findIndex((ch, i) => ch !== e[i]);
      expect(at, at >= 0 ? `round ${round}: character ${at} is ${g[at]}, not ${e[at]}` : "").toBe(-1);
    }
  });

  it("waits for a client that is not reading its events before giving a keycode another character", async () => {
    const { file, pid } = await xterm(agent, "xtest-stopped");
    // A client that lags as much as it can: stopped. The agent may type what fits in the spare
    // keycodes, but must not remap one until xterm has handled the keys that used it.
    process.kill(pid, "SIGSTOP");
    const text = distinctCjk(400);
    const started = Date.now();
    const pending = batch(agent, 0, { actions: [{ type: "type", text }] });
    let settled = false;
    void pending.finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 1500));
    expect(settled, "the batch answered while the client could not have handled its keys").toBe(false);
    process.kill(pid, "SIGCONT");
    const r = await pending;
    expect(r.results[0]).toMatchObject({ ok: true });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    expect(await typedInto(file, text)).toBe(text);
  });

  it("fails the step with `timeout`, never with other text, when the client does not take its keys in time", async () => {
    const impatient = await startAgent({ HOLM_DISPLAY_BASE: String(D), HOLM_KEY_CONFIRM_MS: "800" });
    const { file, pid } = await xterm(impatient, "xtest-hung");
    process.kill(pid, "SIGSTOP");
    const text = distinctCjk(400, 5000);
    const r = await batch(impatient, 0, { actions: [{ type: "type", text }] });
    process.kill(pid, "SIGCONT");
    expect(r.results[0]).toMatchObject({ ok: false, code: "timeout" });
    expect(r.results[0].message).toMatch(/did not go idle/);
    // Whatever was typed before the agent had to wait arrives exactly: a prefix of the text (here
    // none: the agent waits for xterm to take in the first keymap change before typing on it).
    await until(async () => {
      const before = fs.readFileSync(file, "utf8");
      await new Promise((r) => setTimeout(r, 300));
      return fs.readFileSync(file, "utf8") === before;
    }, "xterm to have written what it got");
    const got = fs.readFileSync(file, "utf8");
    expect(text.startsWith(got), `got ${got.slice(0, 20)}…`).toBe(true);
  });

  it("turns CRLF into one Return and refuses control characters with no key", async () => {
    const file = await terminal(agent, "xtest-crlf");
    const r = await batch(agent, 0, { actions: [{ type: "type", text: "a\r\nb\n" }, { type: "type", text: "bell\u0007" }] });
    expect(r.results[0].ok).toBe(true);
    expect(r.results[1]).toMatchObject({ ok: false, code: "bad_request" });
    expect(await typedInto(file, "a\nb\n")).toBe("a\nb\n");
  });

  it("honours delay_ms between characters", async () => {
    const file = await terminal(agent, "xtest-delay");
    const r = await batch(agent, 0, { actions: [{ type: "type", text: "slow\n", delay_ms: 40 }] });
    expect(r.took_ms).toBeGreaterThanOrEqual(5 * 40);
    expect(await typedInto(file, "slow\n")).toBe("slow\n");
  });
});

describe("type through the xdotool fallback", () => {
  it("types the same tricky text through `xdotool type` with argv only", async () => {
    const file = await terminal(fallback, "xdotool-tricky");
    const text = TRICKY + TRICKY;
    const r = await batch(fallback, 0, { actions: [{ type: "type", text }] });
    expect(r.results[0]).toMatchObject({ ok: true, via: "xdotool" });
    expect(await typedInto(file, text)).toBe(text);
  });

  it("clicks and presses keys through xdotool too", async () => {
    const file = await terminal(fallback, "xdotool-keys");
    const r = await batch(fallback, 0, { actions: [{ type: "type", text: "abc" }, { type: "press", chord: "BackSpace", then: "Return" }] });
    expect(r.results.every((x: { ok: boolean }) => x.ok)).toBe(true);
    expect(await typedInto(file, "ab\n")).toBe("ab\n");
  });
});
