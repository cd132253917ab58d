import { describe, expect, it } from "vitest";
import { serverWithOneBox } from "../support/one-box";
import { type TestServer, json } from "../support/server";

// Text typed right after a click on a busy Wayland box (ADR 0030): the click goes to sway through
// wayvnc, text outside wayvnc's keymap through wtype, a client of sway's own. Its keys must come
// after the click that focused the field, every time: a loaded CI run lost "fork" of "fork ✓ 中文
// é", and here, before the fix, a few runs in 20 typed their first keys into nothing (the page
// saw "f o click r k …").

let server: TestServer;
let box: any;

const PAGE =
  "data:text/html,<style>body{margin:0}input{position:absolute;left:40px;top:40px;width:400px;height:40px}</style><input id=t>" +
  "<script>window.seen=[];addEventListener('mousedown',()=>seen.push('click'),true);addEventListener('keydown',e=>seen.push(e.key),true)</script>";

serverWithOneBox(
  (s, b) => {
    server = s;
    box = b;
  },
  {},
  { desktop: { server: "wayland", features: [] } },
);

async function batch(actions: unknown[]): Promise<any> {
  const res = await server.api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions } });
  const body = await json(res);
  expect(res.status, JSON.stringify(body).slice(0, 600)).toBe(200);
  return body;
}

const evaluate = async (expression: string): Promise<any> => (await batch([{ type: "evaluate", what: { expression } }])).results[0].value;

async function exec(argv: string[]): Promise<void> {
  const res = await server.api(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv } });
  expect(res.status, JSON.stringify(await json(res)).slice(0, 600)).toBe(200);
}

describe("Wayland: text typed right after a click", () => {
  it("reaches the clicked field whole, run after run, while the box is busy", async () => {
    const text = "fork ✓ 中文 é";
    await batch([{ type: "open_url", url: PAGE, target: "current" }, { type: "wait", ms: 300 }]);
    // Busy loops in the box (ended below, or by `timeout`): sway, wayvnc and Chromium wait for
    // CPU, as on a loaded CI machine.
    await exec(["sh", "-c", "for i in 1 2 3 4; do timeout 120 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $! >>/tmp/busy.pids; done"]);
    const lost: string[] = [];
    try {
      for (let i = 0; i < 20; i++) {
        await evaluate("document.querySelector('#t').value='';document.querySelector('#t').blur();seen.length=0;1");
        await batch([{ type: "click", at: { x: 200, y: 150 } }, { type: "type", text }]);
        const deadline = Date.now() + 5000;
        let v = "";
        while ((v = await evaluate("document.querySelector('#t').value")) !== text && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        if (v !== text) lost.push(`${JSON.stringify(v)} after ${JSON.stringify(await evaluate("seen.join(' ')"))}`);
      }
    } finally {
      await exec(["sh", "-c", "kill $(cat /tmp/busy.pids); rm /tmp/busy.pids"]).catch(() => undefined);
    }
    expect(lost).toEqual([]);
  }, 600_000);
});
