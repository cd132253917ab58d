import { describe, expect, it } from "vitest";
import { type ListBox, applyListQuery, labelsOf, parseLabelsText, readListQuery, toListBox, writeListQuery } from "~/components/box-list-query";
import type { BoxJson } from "~/models/box.server";

// The box list's filter, search and sort (applied in the page to the live list) and their
// query string, on boxes that differ in each thing a person filters by.

const box = (id: string, over: Partial<BoxJson>): ListBox =>
  toListBox({ id: `box_${id.padEnd(32, "0")}`, state: "ready", labels: {}, created_at_ms: 0, expires_at_ms: 0, spec: {}, ...over } as BoxJson);

const a = box("a1", { name: "Checkout flow", labels: { team: "web" }, created_at_ms: 1, expires_at_ms: 30, created_by: { kind: "key", id: "key:1", name: "ci agent" } });
const b = box("b2", { name: "beta", labels: { team: "data", env: "" }, state: "stopped", created_at_ms: 2, expires_at_ms: 10, created_by: { kind: "person", id: "user:1", name: "Ada" } });
const c = box("c3", { state: "starting", created_at_ms: 3, expires_at_ms: 20 });
const all = [a, b, c];
const ids = (boxes: ListBox[]) => boxes.map((x) => x.id.slice(4, 6));
const q = (s: string) => readListQuery(new URLSearchParams(s));

describe("the box list's query", () => {
  it("sorts newest, oldest, by name (unnamed last), by expiry and by state", () => {
    expect(ids(applyListQuery(all, q("")))).toEqual(["c3", "b2", "a1"]);
    expect(ids(applyListQuery(all, q("sort=oldest")))).toEqual(["a1", "b2", "c3"]);
    expect(ids(applyListQuery(all, q("sort=name")))).toEqual(["b2", "a1", "c3"]);
    expect(ids(applyListQuery(all, q("sort=expiry")))).toEqual(["b2", "c3", "a1"]);
    expect(ids(applyListQuery(all, q("sort=state")))).toEqual(["c3", "a1", "b2"]);
    // An unknown sort is the default, not an error.
    expect(q("sort=bogus").sort).toBe("newest");
  });

  it("filters by state and by one label (a label with no value is its key), and searches every field", () => {
    expect(ids(applyListQuery(all, q("state=stopped")))).toEqual(["b2"]);
    expect(ids(applyListQuery(all, q("label=team%3Dweb")))).toEqual(["a1"]);
    expect(ids(applyListQuery(all, q("label=env")))).toEqual(["b2"]);
    expect(ids(applyListQuery(all, q("label=team")))).toEqual([]);
    expect(ids(applyListQuery(all, q("q=checkout")))).toEqual(["a1"]);
    expect(ids(applyListQuery(all, q("q=CI+AGENT")))).toEqual(["a1"]);
    expect(ids(applyListQuery(all, q("q=c3")))).toEqual(["c3"]);
    expect(ids(applyListQuery(all, q("q=team%3Ddata")))).toEqual(["b2"]);
    expect(ids(applyListQuery(all, q("q=ada+beta")))).toEqual(["b2"]);
    expect(ids(applyListQuery(all, q("q=ada+checkout")))).toEqual([]);
    expect(ids(applyListQuery(all, q("q=web&state=stopped")))).toEqual([]);
  });

  it("writes only what is not the default, and lists the labels in use", () => {
    expect(writeListQuery(new URLSearchParams("q=x&sort=name"), { q: "", sort: "newest", label: "team=web" }).toString()).toBe("label=team%3Dweb");
    expect(labelsOf(all)).toEqual(["env", "team=data", "team=web"]);
  });

  it("keeps only what the list shows of a box", () => {
    const full = { ...a, spec: { desktop: {} }, placement: {}, start: { phase: "x", phases: [], log: ["a long log"] } } as unknown as BoxJson;
    const kept = toListBox(full);
    expect(Object.keys(kept).sort()).toEqual(["created_at_ms", "created_by", "expires_at_ms", "height", "id", "labels", "name", "screens", "start", "state", "width"]);
    expect(kept.start).toEqual({ phase: "x", phases: [] });
    // A starting box keeps its phases and build step for its progress bar, never its log.
    const starting = { ...full, state: "starting", start: { phase: "image", phases: [{ name: "queued", at_ms: 1 }], build: { step: 2, total: 9, line: "RUN" }, log: ["x"] } } as unknown as BoxJson;
    expect(toListBox(starting).start).toEqual({ phase: "image", phases: [{ name: "queued", at_ms: 1 }], build: { step: 2, total: 9, line: "RUN" } });
  });

  it("reads labels as a person types them", () => {
    expect(parseLabelsText(" team = web, env ,\nci.run/id=42 ")).toEqual({ team: "web", env: "", "ci.run/id": "42" });
    expect(parseLabelsText("")).toEqual({});
    expect(parseLabelsText("=x")).toBeUndefined();
    // Kept as an own key (a plain object's `__proto__` setter would drop it), so the schema
    // check refuses it by name instead of the box launching without that label.
    expect(Object.keys(parseLabelsText("__proto__=x, team=web")!)).toEqual(["__proto__", "team"]);
  });
});
