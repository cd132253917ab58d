import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { appFiles } from "~/runtime/image-source.server";

// The Wayland dock's config (images/x11/waybar/config.cjs, run by the entrypoint with the desktop
// entries of spec.apps): a launcher labelled with each app's whole title.

function dockConfig(apps: { name: string; title?: string }[]): any {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-waybar-"));
  try {
    const entries = appFiles(apps.map((a) => ({ ...a, packages: [], argv: ["true"] }))).filter((f) => f.rel.endsWith(".desktop"));
    const files = entries.map((f) => {
      const file = path.join(dir, path.basename(f.rel));
      fs.writeFileSync(file, f.content);
      return file;
    });
    return JSON.parse(execFileSync(process.execPath, [path.resolve("images/x11/waybar/config.cjs"), ...files], { encoding: "utf8" }));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe("waybar's config", () => {
  it("labels a launcher with the app's whole title, line separators and all (the entry's lines end at \\n alone)", () => {
    // Titles the schema refuses now, but an image built earlier may hold: read whole all the same.
    const config = dockConfig([{ name: "ls", title: "one\u2028two" }, { name: "ps", title: "one\u2029two" }, { name: "nel", title: "one\u0085two" }, { name: "plain" }]);
    expect(config["custom/app-ls"].format).toBe("one\u2028two");
    expect(config["custom/app-ps"].format).toBe("one\u2029two");
    expect(config["custom/app-nel"].format).toBe("one\u0085two");
    // No title: the app's name.
    expect(config["custom/app-plain"].format).toBe("plain");
    expect(config["modules-left"]).toEqual(["custom/app-ls", "custom/app-ps", "custom/app-nel", "custom/app-plain", "wlr/taskbar"]);
  });
});
