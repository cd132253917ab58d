import { afterAll, describe, expect, it } from "vitest";
import { freePortOn, outsideAddress as outside } from "../support/outside";
import { type TestServer, startServer } from "../support/server";

// A fresh server's first account administers it. On a public address the sign-up page used to
// hand the server to the first stranger who found it; now the first account is made from the
// machine itself (a loopback peer) or with the server token.

const servers: TestServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

async function serverOutside(token: string): Promise<TestServer> {
  const port = await freePortOn(outside!);
  const s = await startServer({ HOLM_SERVER_TOKEN: token, HOLM_SERVER_ADDR: `${outside}:${port}` });
  servers.push(s);
  return s;
}

const signUpForm = (s: TestServer, extra: Record<string, string> = {}, headers: Record<string, string> = {}) =>
  fetch(`${s.base}/signup`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams({ name: "Mallory", email: "mallory@example.com", password: "correct horse battery", confirm: "correct horse battery", workspace: "Mine", ...extra }).toString(),
  });

/** The text of the page's alerts (role="alert" and the info notes), tags stripped. */
const said = (html: string) => html.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ");

describe.skipIf(!outside)("the first account on a server reached from another machine", () => {
  it("cannot be made without the server token when the server has none, even claiming to be loopback", async () => {
    const s = await serverOutside("");
    const page = await (await fetch(`${s.base}/signup`)).text();
    expect(said(page)).toContain("The first account administers this server, so it is made from the machine itself");
    expect(page).not.toContain('name="password"');
    for (const headers of [{}, { "x-forwarded-for": "127.0.0.1" }] as Record<string, string>[]) {
      const res = await signUpForm(s, {}, headers);
      expect(res.status).not.toBe(302);
      expect(res.headers.get("set-cookie") ?? "").not.toMatch(/holm_session=/);
      expect(said(await res.text())).toContain("the first account administers this server");
    }
    // Nothing was made: the server is still fresh (log-in sends a person to sign up).
    const login = await fetch(`${s.base}/login`, { redirect: "manual" });
    expect(login.headers.get("location")).toBe("/signup");
  });

  it("asks for the server token, refuses a wrong one and takes the right one", async () => {
    const token = "a-server-token-of-the-operator-0123";
    const s = await serverOutside(token);
    const page = await (await fetch(`${s.base}/signup`)).text();
    expect(page).toContain('name="setup_token"');
    expect(said(page)).toContain("Server token");

    const wrong = await signUpForm(s, { setup_token: `${token}x` });
    expect(wrong.headers.get("set-cookie") ?? "").not.toMatch(/holm_session=/);
    const wrongText = await wrong.text();
    expect(said(wrongText)).toContain("the first account administers this server");
    // What was typed stays (the name), the token is not sent back.
    expect(wrongText).not.toContain(token);

    const right = await signUpForm(s, { setup_token: token });
    expect(right.status).toBe(302);
    const cookie = right.headers.get("set-cookie")?.split(";")[0] ?? "";
    expect(cookie).toMatch(/^holm_session=/);
    // The account administers the server: Settings shows it the server's own sign-up switch.
    const settings = await fetch(`${s.base}/settings`, { headers: { cookie }, redirect: "manual" });
    expect(said(await settings.text())).toContain("Anyone who reaches this server may sign up");
    // And the next stranger meets the ordinary sign-up rule (by invitation), not a second first account.
    const next = await signUpForm(s, { email: "eve@example.com", setup_token: token });
    expect(said(await next.text())).toContain("sign-up is by invitation on this server");
  });
});
