import { describe, expect, it } from "vitest";
import { refOf, useElementBox } from "../support/element-page";

// The server keeps each tab's latest snapshot and answers from it while the page's watcher
// (app/models/page-element-watch.server.ts) says nothing changed: a snapshot of an unchanged page,
// and the check of a ref before an operation, then cost no new snapshot, and an operation that
// changes nothing takes none after it. Each test changes the page behind the server's back, by
// its own Playwright, in a way that leaves no trace in the DOM or fires no event, and checks that
// the next answer shows it all the same: "Refs stay valid until the page changes; a stale or
// unknown ref answers the seed's error, never a click somewhere else" (issue 12).

const the = useElementBox();

const js = <T>(expr: string) => the.eb.page.evaluate(expr) as Promise<T>;
const byName = (snap: { elements: any[] }, name: string) => snap.elements.find((e) => e.name === name);

describe("a kept snapshot", () => {
  it("an unchanged page answers the same elements again, with a new rev and an empty delta", async () => {
    await the.eb.open("element-watch.html");
    const first = (await the.eb.snapshot()).body;
    const again = (await the.eb.snapshot()).body;
    expect(again.rev).toBe(first.rev + 1);
    expect(again.elements).toEqual(first.elements);
    expect((await the.eb.snapshot(`?delta=${first.rev}`)).body.elements).toEqual([]);
    // An operation that changes nothing reports nothing changed.
    const noop = refOf(first, "Does nothing");
    await the.eb.op({ op: "click", query: noop });
    const twice = await the.eb.op({ op: "click", query: noop });
    expect(twice.body).toMatchObject({ changed: [], navigated: false, element: { ref: noop, name: "Does nothing" } });
  });

  it("a checkbox ticked and a value set by a script (no event, no DOM change) show in the next snapshot", async () => {
    await the.eb.open("element-watch.html");
    const first = (await the.eb.snapshot()).body;
    expect(byName(first, "Quiet box")).toMatchObject({ checked: false });
    await js(`document.getElementById("quiet").checked = true; document.getElementById("note").value = "set by a script"`);
    const next = (await the.eb.snapshot()).body;
    expect(byName(next, "Quiet box")).toMatchObject({ checked: true });
    expect(byName(next, "Note")).toMatchObject({ value: "set by a script" });
  });

  it("an operation whose handler ticks another box by script reports it in changed", async () => {
    await the.eb.open("element-watch.html");
    const snap = (await the.eb.snapshot()).body;
    const r = await the.eb.op({ op: "click", query: refOf(snap, "Set linked") });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.changed).toEqual([expect.objectContaining({ name: "Linked box", checked: true, was: { checked: false } })]);
  });

  it("a rename inside an open shadow root makes the ref stale (404, nothing clicked)", async () => {
    await the.eb.open("element-watch.html");
    const snap = (await the.eb.snapshot()).body;
    const ref = refOf(snap, "Shadow button");
    await js(`document.getElementById("host").shadowRoot.getElementById("sb").textContent = "Renamed in the shadow"`);
    const r = await the.eb.op({ op: "click", query: ref });
    expect(r.status, JSON.stringify(r.body)).toBe(404);
    expect(r.body.message).toContain("stale");
    expect(await js<number>("window.shadowClicks")).toBe(0);
    expect(byName((await the.eb.snapshot()).body, "Renamed in the shadow")).toBeDefined();
  });

  it("after the page scrolls, the boxes move", async () => {
    await the.eb.open("element-watch.html");
    const before = byName((await the.eb.snapshot()).body, "Watched page").box;
    await js("window.scrollTo(0, 400)");
    const after = byName((await the.eb.snapshot()).body, "Watched page").box;
    expect(after.y).toBe(before.y - 400);
  });

  it("hover shows a CSS :hover menu (no DOM change): its links appear", async () => {
    await the.eb.open("element-watch.html");
    const snap = (await the.eb.snapshot()).body;
    expect(byName(snap, "Hidden one")).toBeUndefined();
    const r = await the.eb.op({ op: "hover", query: refOf(snap, "Menu") });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((r.body.appeared ?? []).map((e: any) => e.name)).toEqual(["Hidden one", "Hidden two"]);
  });

  it("a page with a frame: a change inside the frame shows in the next snapshot", async () => {
    await the.eb.open("element-frame.html");
    const snap = (await the.eb.snapshot()).body;
    expect(byName(snap, "Inner button")).toBeDefined();
    const frame = the.eb.page.frames().find((f) => f.url().includes("element-inner.html"))!;
    await frame.evaluate(() => (document.querySelector("button")!.textContent = "Renamed in the frame"));
    const next = (await the.eb.snapshot()).body;
    expect(byName(next, "Renamed in the frame")).toBeDefined();
    expect(byName(next, "Inner button")).toBeUndefined();
  });
});
