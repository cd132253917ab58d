import { consoleClient } from "../tests/support/console";
import { json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// Log-in latency including password hashing, and what a key check adds to a request.

export async function benchAuth() {
  const server = await startServer();
  try {
    const c = consoleClient(server);
    const ada = await c.signUp("ada@example.com", "Bench");
    const key = await c.createKey(ada, "bench");
    const logins: number[] = [];
    for (let i = 0; i < 30; i++) {
      const t0 = now();
      const res = await c.form(undefined, "/login", { email: "ada@example.com", password: "correct horse battery", next: "/" });
      logins.push(now() - t0);
      if (res.status !== 302) throw new Error(`log-in answered ${res.status}`);
    }
    summarize("log-in (form POST, scrypt included)", logins);

    const box = await json(
      await fetch(`${server.base}/v1/boxes`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
        body: "{}",
      }),
    );
    const time = async (auth: string) => {
      const out: number[] = [];
      for (let i = 0; i < 1200; i++) {
        const t0 = now();
        const res = await fetch(`${server.base}/v1/boxes/${box.id}`, { headers: { authorization: auth } });
        await res.arrayBuffer();
        if (i >= 200) out.push(now() - t0);
      }
      return out;
    };
    // Interleaved rounds so machine noise falls on both alike.
    const withToken: number[] = [];
    const withKey: number[] = [];
    for (let round = 0; round < 3; round++) {
      withToken.push(...(await time(`Bearer ${server.token}`)));
      withKey.push(...(await time(`Bearer ${key.secret}`)));
    }
    const t = summarize("GET /v1/boxes/{id} with the server token", withToken);
    const k = summarize("GET /v1/boxes/{id} with a holm_sk_ key", withKey);
    console.log(`  a key check adds ${(k.median - t.median).toFixed(3)} ms at the median (target ≤ 1 ms)`);
  } finally {
    await server.stop();
    await removeTestBoxes();
  }
}
