import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { loadConfigFile } from "~/utils/config-file.server";

// The configuration file (HOLM_CONFIG_FILE, default /etc/holm/holm.env): read in dotenv format
// under the environment, which wins.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-config-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text, { mode: 0o600 });
  return file;
}

describe("configuration file", () => {
  it("sets what the environment does not, and the environment wins", () => {
    const file = write("a.env", [
      "# holm settings",
      "HOLM_SERVER_ADDR=127.0.0.1:9123",
      'HOLM_STATE_DIR="/var/lib/holm"',
      "export HOLM_SERVER_TOKEN=from-the-file-0123456789",
      "HOLM_STORAGE_BACKEND=local",
      "",
    ].join("\n"));
    const target: NodeJS.ProcessEnv = { HOLM_CONFIG_FILE: file, HOLM_STORAGE_BACKEND: "memory" };
    const got = loadConfigFile(target);
    expect(got.file).toBe(file);
    expect(got.applied.sort()).toEqual(["HOLM_SERVER_ADDR", "HOLM_SERVER_TOKEN", "HOLM_STATE_DIR"]);
    expect(got.overridden).toEqual(["HOLM_STORAGE_BACKEND"]);
    expect(target).toMatchObject({
      HOLM_SERVER_ADDR: "127.0.0.1:9123",
      HOLM_STATE_DIR: "/var/lib/holm",
      HOLM_SERVER_TOKEN: "from-the-file-0123456789",
      HOLM_STORAGE_BACKEND: "memory",
    });
  });

  it("refuses a named file it cannot read, and reads none when told so", () => {
    expect(() => loadConfigFile({ HOLM_CONFIG_FILE: path.join(dir, "missing.env") })).toThrow(/HOLM_CONFIG_FILE: cannot read .*missing\.env \(ENOENT\)/);
    for (const none of ["", "none"]) {
      const target: NodeJS.ProcessEnv = { HOLM_CONFIG_FILE: none };
      expect(loadConfigFile(target)).toEqual({ applied: [], overridden: [] });
      expect(Object.keys(target)).toEqual(["HOLM_CONFIG_FILE"]);
    }
  });

  it("is read by env() before validation, so a bad value in the file stops the server naming it", async () => {
    const saved = { ...process.env };
    try {
      process.env.HOLM_CONFIG_FILE = write("b.env", "HOLM_SERVER_ADDR=127.0.0.1:9124\nHOLM_LAUNCH_CONCURRENCY=7\n");
      process.env.HOLM_LAUNCH_CONCURRENCY = "3";
      delete process.env.HOLM_SERVER_ADDR;
      vi.resetModules();
      const m = await import("~/utils/env.server");
      expect(m.env().HOLM_SERVER_ADDR).toEqual({ host: "127.0.0.1", port: 9124 });
      expect(m.env().HOLM_LAUNCH_CONCURRENCY).toBe(3);
      expect(m.configFileResult()).toMatchObject({ applied: ["HOLM_SERVER_ADDR"], overridden: ["HOLM_LAUNCH_CONCURRENCY"] });

      process.env = { ...saved, HOLM_CONFIG_FILE: write("c.env", "HOLM_SERVER_TOKEN=short\n") };
      delete process.env.HOLM_SERVER_TOKEN;
      vi.resetModules();
      const again = await import("~/utils/env.server");
      expect(() => again.env()).toThrow(/HOLM_SERVER_TOKEN: must be at least 16 characters/);
    } finally {
      process.env = saved;
      vi.resetModules();
    }
  });
});
