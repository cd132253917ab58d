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
  const file = path.join(dir, `${name}.txt`);
  fs.writeFileSync(file, "");
  // cooked mode: Return arrives as \n; no echo so the screen stays calm.
  startXterm(D, ["-u8", "-geometry", "200x50+0+0", "-title", name, "-e", "sh", "-c", `stty -echo; exec cat > '${file}'`]);
  await until(async () => (await batch(a, 0, { actions: [{ type: "windows" }] })).windows.find((w: { title: string }) => w.title === name), "xterm");
  // No window manager here: click into it to give it the focus.
  await batch(a, 0, { actions: [{ type: "click", at: { x: 300, y: 200 } }] });
  await new Promise((r) => setTimeout(r, 200));
  return file;
}

const TRICKY = `héllo $(rm -rf /) \`id\` "dq" 'sq' \\back ; | & > < * ? ~ ! # % ^ { } [ ] 中文字 😀👍🏽 ñ ü ß € ©\ttab\n`;

function thousand(): string {
  const base = TRICKY;
  let s = "";
  while (Array.from(s).length < 1000) s += base;
  const cps = Array.from(s).slice(0, 999);
  return cps.join("") + "\n";
}

async function typedInto(file: string, expected: string): Promise<string> {
  const want = Buffer.byteLength(expected);
  await until(() => fs.statSync(file).size >= want, `${want} bytes in ${file}`, 10_000);
  await new Promise((r) => setTimeout(r, 100));
  return fs.readFileSync(file, "utf8");
}

describe("type through XTEST", () => {
  it("types 1,000 characters, off-keymap ones included, in under a second, all arriving", async () => {
    const file = await terminal(agent, "xtest-1000");
    const text = thousand();
    expect(Array.from(text).length).toBe(1000);
    const r = await batch(agent, 0, { actions: [{ type: "type", text, delay_ms: 0 }] });
    expect(r.results[0]).toMatchObject({ ok: true, typed: 1000, via: "xtest" });
    expect(r.took_ms).toBeLessThan(1000);
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
