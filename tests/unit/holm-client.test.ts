import { describe, expect, it } from "vitest";
import { Holm, HolmApiError } from "~/client/holm";
import { openApiDocument } from "~/edge/openapi.server";

// The typed client against the document, with no server: every request a client method sends is
// an operation the document (and so the router) has, and an error answer becomes HolmApiError
// with the server's code.

const doc = openApiDocument() as { paths: Record<string, Record<string, unknown>> };
const templates = Object.entries(doc.paths).flatMap(([p, item]) =>
  Object.keys(item).map((m) => ({ m: m.toUpperCase(), re: new RegExp(`^${p.replace(/\{\w+\}/g, "[^/]+").replace(/\./g, "\\.")}$`) })),
);

function recorder(answer: unknown = {}) {
  const sent: string[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    sent.push(`${init.method} ${new URL(url).pathname}`);
    return Response.json(answer);
  }) as typeof globalThis.fetch;
  return { sent, holm: new Holm({ baseUrl: "http://holm.test", token: "t", fetch }) };
}

describe("the typed client", () => {
  it("sends only requests the document has", async () => {
    const { sent, holm } = recorder({ boxes: [], tabs: [], entries: [], next: null, events: [], more: false, hash: "h", contents_base64: "aGk=", state: "ready", id: "box_1" });
    const id = "box_1";
    await Promise.all([
      holm.health(), holm.openapi(), holm.boxes.list(), holm.boxes.create({}), holm.boxes.get(id), holm.boxes.update(id, { name: "n" }), holm.boxes.remove(id),
      holm.boxes.pause(id), holm.boxes.resume(id), holm.boxes.stop(id), holm.boxes.fork(id, { up_to: 3 }), holm.boxes.exec(id, { argv: ["true"] }),
      holm.boxes.installApps(id, { apps: ["gimp"] }), holm.boxes.catalog(),
      holm.screens.batch(id, [{ type: "wait", ms: 1 }]), holm.screens.frame(id), holm.screens.cursor(id), holm.screens.readClipboard(id),
      holm.screens.setClipboard(id, { text: "x" }), holm.screens.windows(id), holm.screens.takeover(id), holm.screens.giveBack(id),
      holm.screens.viewers(id), holm.screens.viewerTicket(id, { mode: "view" }),
      holm.files.read(id, "/etc/hostname"), holm.files.write(id, "/tmp/a", "hi"), holm.files.list(id, "/"), holm.files.grep(id, { pattern: "x" }), holm.files.glob(id, { pattern: "*" }),
      holm.pages.tabs(id), holm.pages.snapshot(id), holm.pages.read(id), holm.pages.find(id, { q: "x" }), holm.pages.element(id, { op: "focus", query: "x" }),
      holm.pages.evaluate(id, { expression: "1" }), holm.pages.screenshot(id),
      holm.trace.read(id), holm.trace.all(id), holm.trace.frame(id, "a".repeat(40)), holm.events.list(),
    ]);
    expect(sent.length).toBeGreaterThan(35);
    const stray = sent.filter((s) => {
      const [m, p] = s.split(" ");
      return !templates.some((t) => t.m === m && t.re.test(p!));
    });
    expect(stray).toEqual([]);
  });

  it("an error answer is HolmApiError with the server's code, message and retryable", async () => {
    const fetch = (async () => Response.json({ code: "denied", message: "a person holds screen 0", retryable: true }, { status: 409 })) as unknown as typeof globalThis.fetch;
    const holm = new Holm({ baseUrl: "http://holm.test", fetch });
    const e = await holm.boxes.pause("box_1").catch((x) => x);
    expect(e).toBeInstanceOf(HolmApiError);
    expect(e).toMatchObject({ status: 409, code: "denied", message: "a person holds screen 0", retryable: true });
  });
});
