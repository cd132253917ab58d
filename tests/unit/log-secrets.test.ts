import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { describeFindings, findSecrets, registerSecret } from "../support/log-secrets";

// The run's check for secrets in the test servers' logs (tests/support/log-secrets.ts), on a log
// directory made here: it finds a registered secret where a server wrote it, as written and as a
// JSON string carries it, and the command scripts/test.sh runs fails on it.

const ROOT = path.resolve(import.meta.dirname, "../..");
const saved = process.env.HOLM_TEST_LOG_DIR;
let dir = "";

function freshDir() {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-log-secrets-"));
  process.env.HOLM_TEST_LOG_DIR = dir;
  return dir;
}

afterEach(() => {
  process.env.HOLM_TEST_LOG_DIR = saved;
  if (saved === undefined) delete process.env.HOLM_TEST_LOG_DIR;
  fs.rmSync(dir, { recursive: true, force: true });
});

const check = (d: string) => {
  try {
    return { code: 0, out: execFileSync(process.execPath, ["--import", "tsx", "scripts/check-log-secrets.ts", d], { cwd: ROOT, encoding: "utf8", stdio: "pipe" }) };
  } catch (e) {
    const err = e as { status: number; stderr: string };
    return { code: err.status, out: err.stderr };
  }
};

describe("secrets in the servers' logs", () => {
  it("finds none in clean logs, and the command passes", () => {
    const d = freshDir();
    registerSecret("holm_sk_abcdefghijklmnop", "an API key");
    fs.writeFileSync(path.join(d, "server-1.log"), '{"level":"info","msg":"request","route":"/v1/boxes","actor":"key:ci"}\n');
    expect(findSecrets(d)).toEqual([]);
    expect(check(d)).toMatchObject({ code: 0, out: expect.stringContaining("1 secret(s) looked for in 1 log(s)") });
  });

  it("finds a registered secret a server logged, with file and line, and the command fails", () => {
    const d = freshDir();
    registerSecret("holm_sk_abcdefghijklmnop", "an API key");
    registerSecret('pa"ss\\word-123', "a password");
    registerSecret("short", "too short to look for");
    fs.writeFileSync(path.join(d, "server-1.log"), 'line one\n{"msg":"debug","authorization":"Bearer holm_sk_abcdefghijklmnop"}\n');
    // JSON writes the quote and backslash escaped: found that way too.
    fs.writeFileSync(path.join(d, "server-2.log"), '{"msg":"login","password":"pa\\"ss\\\\word-123"}\n');
    const found = findSecrets(d);
    expect(found.map((f) => [path.basename(f.file), f.line, f.what])).toEqual([
      ["server-1.log", 2, "an API key"],
      ["server-2.log", 1, "a password"],
    ]);
    // What is printed names the secret, never shows it.
    expect(describeFindings(found)).not.toContain("holm_sk_abcdefghijklmnop");
    const run = check(d);
    expect(run.code).toBe(1);
    expect(run.out).toContain("2 secret(s) in the servers' logs");
    expect(run.out).toContain("an API key in");
  });
});
