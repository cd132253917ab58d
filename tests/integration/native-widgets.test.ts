import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// Native widgets (seed 000 "Native widgets", issue 18) on a real box, through AT-SPI: a GTK
// dialog (zenity, from Debian, as a spec app) and a Qt one (PyQt5) walked as a tree with roles and names, its text
// field found by its label and set, its button invoked — zenity then prints what the field
// held, which is how we know the widget really took it; a Chromium page's controls found the
// same way; an unknown node is 404 not_found; a box without the feature says `unsupported`.

let server: TestServer;
let box: any;

// The desktop the suite's boxes run: X11, or Wayland when native-widgets.wayland.test.ts imports
// it. There GTK (zenity) and Chromium are Wayland clients, and the Qt dialog (Debian's Qt 5 has no
// Wayland platform without qtwayland5) an X11 client of XWayland (`x11_apps`).
const DESKTOP = (globalThis as { HOLM_WIDGETS_DESKTOP?: string }).HOLM_WIDGETS_DESKTOP ?? "x11";
const desktopOf = (features: string[]) =>
  DESKTOP === "wayland" ? { server: "wayland", features: [...features, "x11_apps"] } : { features };

const QT_DIALOG = `
import sys
from PyQt5.QtWidgets import QApplication, QDialog, QFormLayout, QLineEdit, QPushButton
app = QApplication(["qtcity"])
app.setApplicationName("qtcity")
d = QDialog()
d.setWindowTitle("Qt City")
form = QFormLayout(d)
field = QLineEdit()
form.addRow("City", field)
save = QPushButton("Save")
form.addRow(save)
def saved():
    with open("/tmp/qt.out", "w") as f:
        f.write(field.text() + "\\n")
    app.quit()
save.clicked.connect(saved)
d.show()
app.exec_()
`;

const SPEC = {
  desktop: desktopOf(["accessibility"]),
  apps: {
    address: {
      packages: ["zenity"],
      argv: ["sh", "-c", "zenity --entry --title Address --text Street > /tmp/zenity.out; echo $? > /tmp/zenity.rc"],
      window_class: "Zenity",
    },
    // A Qt dialog (PyQt5 from Debian): a QLineEdit labelled "City" by its form row and a "Save"
    // button that writes what the field holds.
    qtcity: {
      packages: ["python3-pyqt5"],
      argv: ["python3", "-c", QT_DIALOG],
      window_class: "qtcity",
    },
  },
};

beforeAll(async () => {
  server = await startServer();
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const node = (body: unknown, screen = 0) =>
  server.api(`/v1/boxes/${box.id}/screens/${screen}/desktop/node`, { method: "POST", json: body });

async function ok(body: unknown): Promise<any> {
  const res = await node(body);
  const out = await json(res);
  expect(res.status, JSON.stringify(out).slice(0, 500)).toBe(200);
  return out;
}

const exec = async (cmd: string) =>
  (await json(await server.api(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["sh", "-c", cmd] } }))).stdout as string;

/** Every node of a tree, flat. */
const flat = (n: any): any[] => [n, ...(n.children ?? []).flatMap(flat)];

describe("native widgets (AT-SPI)", () => {
  it("a GTK dialog: its tree with roles and names; its field found by label and set; its button invoked", async () => {
    const res = await server.api("/v1/boxes", { method: "POST", json: { spec: SPEC } });
    box = await json(res);
    expect(res.status, JSON.stringify(box).slice(0, 500)).toBe(200);
    expect(box.spec.desktop.server).toBe(DESKTOP);
    const launched = await json(
      await server.api(`/v1/boxes/${box.id}/screens/0/actions`, {
        method: "POST",
        json: { actions: [{ type: "launch", app: "address" }, { type: "await_window", what: { class: "Zenity", within_ms: 20_000 } }] },
      }),
    );
    expect(launched.results[1], JSON.stringify(launched.results)).toMatchObject({ ok: true });

    // The dialog registers on the accessibility bus a moment after its window maps.
    let tree: any;
    for (let i = 0; i < 50; i++) {
      const res = await node({ op: "tree", app: "zenity" });
      if (res.status === 200) {
        tree = await json(res);
        if (flat(tree.apps[0]).some((n) => n.role === "push_button" && n.name === "OK")) break;
      } else await res.arrayBuffer();
      await new Promise((r) => setTimeout(r, 200));
    }
    const nodes = flat(tree.apps[0]);
    expect(tree.apps[0]).toMatchObject({ role: "application", name: "zenity" });
    expect(nodes.find((n) => n.role === "dialog")).toMatchObject({ name: "Address", states: expect.arrayContaining(["showing"]) });
    expect(nodes.find((n) => n.role === "label")).toMatchObject({ name: "Street" });
    expect(nodes.filter((n) => n.role === "push_button").map((n) => n.name).sort()).toEqual(["Cancel", "OK"]);
    // depth cuts the tree.
    const shallow = await ok({ op: "tree", app: "zenity", depth: 1 });
    expect(shallow.apps[0].children.every((c: any) => c.children === undefined)).toBe(true);

    // The seed's own query: the field named by the label beside it.
    const found = await ok({ op: "find", node: { query: "Street", role: "text" } });
    expect(found.total).toBe(1);
    expect(found.nodes[0]).toMatchObject({ role: "text", app: "zenity", label: "Street", value: "", states: expect.arrayContaining(["editable"]) });
    expect(found.nodes[0].bounds.width).toBeGreaterThan(20);

    const set = await ok({ op: "set", node: { query: "Street", role: "text" }, value: "Main Street 1" });
    expect(set.node).toMatchObject({ role: "text", value: "Main Street 1" });
    const focused = await ok({ op: "focus", node: { query: "Street", role: "text" } });
    expect(focused.node.states).toContain("focused");

    // An action the button does not have is named; then the real one.
    const wrong = await node({ op: "invoke", node: { query: "OK", role: "button" }, action: "explode" });
    expect(wrong.status).toBe(400);
    expect((await json(wrong)).message).toMatch(/has no action "explode" \(it has: click\)/);
    const invoked = await ok({ op: "invoke", node: { query: "OK", role: "button" } });
    expect(invoked).toMatchObject({ action: "click", node: { role: "push_button", name: "OK" } });
    for (let i = 0; i < 50 && !(await exec("cat /tmp/zenity.rc 2>/dev/null")); i++) await new Promise((r) => setTimeout(r, 100));
    expect(await exec("cat /tmp/zenity.rc")).toBe("0\n");
    expect(await exec("cat /tmp/zenity.out")).toBe("Main Street 1\n");

    // Each call is in the trace as an on_node step.
    const trace = await json(await server.api(`/v1/boxes/${box.id}/trace?limit=500`));
    const ops = trace.entries.filter((e: any) => e.event === "acted" && e.data.step.type === "on_node").map((e: any) => e.data.step.what.op);
    expect(ops).toEqual(expect.arrayContaining(["tree", "find", "set", "focus", "invoke"]));
  }, 600_000);

  it("a Qt dialog: its field found by its form label and set, its button invoked (zenity's GTK is not the only toolkit)", async () => {
    const launched = await json(
      await server.api(`/v1/boxes/${box.id}/screens/0/actions`, {
        method: "POST",
        json: { actions: [{ type: "launch", app: "qtcity" }, { type: "await_window", what: { class: "qtcity", within_ms: 20_000 } }] },
      }),
    );
    expect(launched.results[1], JSON.stringify(launched.results)).toMatchObject({ ok: true });
    let found: any;
    for (let i = 0; i < 50; i++) {
      const res = await node({ op: "find", node: { query: "City", role: "text" } });
      found = await json(res);
      if (res.status === 200 && found.total > 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(found.nodes?.[0], JSON.stringify(found).slice(0, 500)).toMatchObject({ role: "text", value: "", states: expect.arrayContaining(["editable"]) });
    const tree = await ok({ op: "tree", app: found.nodes[0].app });
    const nodes = flat(tree.apps[0]);
    expect(nodes.find((n) => n.role === "dialog")).toMatchObject({ name: "Qt City" });
    expect(nodes.filter((n) => n.role === "push_button").map((n) => n.name)).toEqual(["Save"]);

    const set = await ok({ op: "set", node: { query: "City", role: "text" }, value: "Zürich" });
    expect(set.node).toMatchObject({ role: "text", value: "Zürich" });
    const invoked = await ok({ op: "invoke", node: { query: "Save", role: "button" } });
    expect(invoked.node).toMatchObject({ role: "push_button", name: "Save" });
    for (let i = 0; i < 50 && !(await exec("cat /tmp/qt.out 2>/dev/null")); i++) await new Promise((r) => setTimeout(r, 100));
    expect(await exec("cat /tmp/qt.out")).toBe("Zürich\n");
  }, 120_000);

  it("a Chromium page's controls are widgets too; an unknown node is 404 not_found; ambiguity is named", async () => {
    const page = "data:text/html,<title>Form</title><label>Street <input value='x'></label><button>Send</button><button>Send later</button><button>Send</button>";
    await json(await server.api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "open_url", url: page }] } }));
    let found: any;
    for (let i = 0; i < 30; i++) {
      found = await ok({ op: "find", node: { query: "Street", role: "text" } });
      if (found.total > 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(found.nodes[0]).toMatchObject({ app: "Chromium", value: "x" });
    const missing = await node({ op: "focus", node: { query: "No such widget anywhere" } });
    expect(missing.status).toBe(404);
    expect(await json(missing)).toEqual({ code: "not_found", message: expect.stringContaining('no widget matches "No such widget anywhere"'), retryable: false });
    const two = await node({ op: "invoke", node: { query: "Send", role: "button" } });
    expect(two.status).toBe(422);
    expect((await json(two)).message).toMatch(/^.*2 widgets match "Send" with role button/);
    const bad = await node({ op: "find", node: { query: "Street" }, colour: "red" });
    expect(bad.status).toBe(400);
    expect((await json(bad)).code).toBe("bad_request");
  }, 120_000);

  it("a box without the accessibility feature answers 400 unsupported, naming the feature", async () => {
    const res = await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: desktopOf([]) } } });
    const plain = await json(res);
    expect(res.status, JSON.stringify(plain).slice(0, 300)).toBe(200);
    const out = await server.api(`/v1/boxes/${plain.id}/screens/0/desktop/node`, { method: "POST", json: { op: "tree" } });
    expect(out.status).toBe(400);
    expect(await json(out)).toMatchObject({ code: "unsupported", message: expect.stringContaining("accessibility") });
    await server.api(`/v1/boxes/${plain.id}`, { method: "DELETE" });
  }, 300_000);
});
