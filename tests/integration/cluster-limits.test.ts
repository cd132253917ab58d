import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OwnRedis, ownRedis } from "../support/outage";
import { type Person, consoleClient } from "../support/console";
import { clusterEnv } from "../support/cluster";
import { createTestDatabase, dropTestDatabases } from "../support/postgres";
import { RUN_LABEL, type TestServer, startServer } from "../support/server";

// The log-in limits hold across the servers of a cluster (docs/decisions/0021): a guesser whose
// requests land on every server in turn gets the guesses one server would allow, not N times as
// many (was: 8 wrong on A, then 8 more on B).

// A Redis of this file's own: the last test stops it (the shared test Redis serves other suites).
const WANTED = process.env.HOLM_TEST_REDIS !== "0" && process.env.HOLM_TEST_POSTGRES !== "0";
let redis: OwnRedis;

let a: TestServer;
let b: TestServer;
let database: string;
let ada: Person;

beforeAll(async () => {
  if (!WANTED) return;
  redis = await ownRedis();
  database = await createTestDatabase(RUN_LABEL);
  const shared = clusterEnv(database, redis.url);
  // One after the other: the first one migrates the shared database.
  a = await startServer(shared);
  b = await startServer(shared);
  ada = await consoleClient(a).signUp("ada@example.com", "A");
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop("SIGKILL"), b?.stop("SIGKILL")]);
  if (database) await dropTestDatabases([database]);
  await redis?.stop();
});

const logIn = async (s: TestServer, email: string, password: string) => {
  const res = await consoleClient(s).form(undefined, "/login", { email, password, next: "/" });
  return { status: res.status, text: await res.text() };
};

describe.runIf(WANTED)("log-in limits across servers", () => {
  it("8 wrong passwords for an account on server A, then the 9th on server B is refused", async () => {
    for (let i = 0; i < 8; i++) {
      const r = await logIn(a, "nobody@x.example", "wrong password!!");
      expect(r.text, `attempt ${i + 1} on A`).toContain("the email or password is not right");
    }
    const ninth = await logIn(b, "nobody@x.example", "wrong password!!");
    expect(ninth.text).toMatch(/too many failed attempts; try again in \d+ s/);
    expect(ninth.text).not.toContain("the email or password is not right");
    expect((await logIn(a, "nobody@x.example", "wrong password!!")).text).toContain("too many failed attempts");
  });

  it("20 attempts a minute from one address, whichever server they reach and whichever accounts they name", async () => {
    // The first test's 10 attempts came from this address too (127.0.0.1): 10 more, alternating.
    const seen: string[] = [];
    for (let i = 0; i < 10; i++) seen.push((await logIn(i % 2 ? b : a, `nobody${i}@x.example`, "wrong password!!")).text);
    expect(seen.every((t) => t.includes("the email or password is not right"))).toBe(true);
    expect((await logIn(b, "someone-else@x.example", "wrong password!!")).text).toMatch(/too many failed attempts; try again in \d+ s/);
    expect((await logIn(a, "another@x.example", "wrong password!!")).text).toMatch(/too many failed attempts; try again in \d+ s/);
  });

  it("a wrong current password at a password change is a guess too: 8 on A, then B refuses the 9th, the right one too", async () => {
    const change = async (s: TestServer, current: string) => {
      const c = consoleClient(s);
      const csrf = c.csrfIn(await c.page(ada, "/settings"));
      return (await c.form(ada, "/settings", { intent: "password", current, next: "a new password!!", confirm: "a new password!!", csrf })).text();
    };
    for (let i = 0; i < 8; i++) expect(await change(a, "wrong password!!"), `attempt ${i + 1} on A`).toContain("the current password is not right");
    expect(await change(b, "wrong password!!")).toMatch(/too many failed attempts; try again in \d+ s/);
    expect(await change(b, "correct horse battery")).toMatch(/too many failed attempts; try again in \d+ s/);
  });

  it("with the cluster's Redis away, log-in still answers at once and each server still limits on its own", async () => {
    await redis.stop();
    // B has seen 7 log-in attempts from this address in this minute: 8 more stay under its 20.
    const t0 = Date.now();
    for (let i = 0; i < 8; i++) expect((await logIn(b, "bob@x.example", "wrong password!!")).text).toContain("the email or password is not right");
    // Not a wait for Redis on each (its bound is 1.5 s a call: 12 s for these 8).
    expect(Date.now() - t0).toBeLessThan(8_000);
    expect((await logIn(b, "bob@x.example", "wrong password!!")).text).toMatch(/too many failed attempts; try again in \d+ s/);
  });
});
