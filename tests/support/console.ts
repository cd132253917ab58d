import { expect } from "vitest";
import { registerSecret } from "./log-secrets";
import type { TestServer } from "./server";

// Drives the console over plain HTTP, as a browser's forms would (no JavaScript).

export interface Person {
  cookie: string;
}

export interface Member extends Person {
  email: string;
  id: string;
}

export function consoleClient(server: TestServer) {
  // Every password sent and session cookie received is a secret the run's log check looks for.
  const form = (p: Person | undefined, url: string, fields: Record<string, string>, headers: Record<string, string> = {}) => {
    registerSecret(fields.password, "a password");
    return fetch(`${server.base}${url}`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", ...(p ? { cookie: p.cookie } : {}), ...headers },
      body: new URLSearchParams(fields).toString(),
    }).then((res) => {
      registerSecret(/holm_session=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1], "a session cookie");
      return res;
    });
  };
  const page = async (p: Person, url: string) => (await fetch(`${server.base}${url}`, { headers: { cookie: p.cookie }, redirect: "manual" })).text();
  const csrfIn = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1]!;

  /** Signs up with a new workspace, or into an invitation's workspace when `invite` is its token. */
  async function signUp(email: string, workspace: string, password = "correct horse battery", invite?: string): Promise<Person> {
    const fields = { name: email.split("@")[0]!, email, password, confirm: password, ...(invite ? { invite } : { workspace }) };
    const res = await form(undefined, "/signup", fields);
    const cookie = res.headers.get("set-cookie")?.split(";")[0];
    expect(cookie, `signup of ${email} answered ${res.status}`).toMatch(/^holm_session=/);
    return { cookie: cookie! };
  }

  async function createKey(p: Person, name: string): Promise<{ secret: string; id: string }> {
    const csrf = csrfIn(await page(p, "/keys"));
    const html = await (await form(p, "/keys?index", { intent: "create", name, csrf })).text();
    const secret = /holm_sk_[a-z2-7]+/.exec(html)![0];
    registerSecret(secret, "an API key");
    const listing = await page(p, "/keys");
    const id = new RegExp(`${name}</td>[\\s\\S]*?name="id" value="(key_[0-9a-f]+)"`).exec(listing)![1]!;
    return { secret, id };
  }

  /** Invites `email` with `role` into the person's current workspace; returns the invitation token. */
  async function inviteToken(p: Person, email: string, role: string): Promise<string> {
    const csrf = csrfIn(await page(p, "/members"));
    const html = await (await form(p, "/members", { intent: "invite", email, role, csrf })).text();
    const token = /\/invite\/([A-Za-z0-9_-]+)/.exec(html)![1]!;
    registerSecret(token, "an invitation token");
    return token;
  }
  /** An admin invites `email` with `role`; the person signs up through the link. */
  async function invite(admin: Person, email: string, role: string): Promise<Member> {
    const csrf = csrfIn(await page(admin, "/members"));
    const html = await (await form(admin, "/members", { intent: "invite", email, role, csrf })).text();
    const token = /\/invite\/([A-Za-z0-9_-]+)/.exec(html)?.[1];
    registerSecret(token, "an invitation token");
    expect(token, `invitation of ${email}: ${html.slice(0, 300)}`).toBeTruthy();
    const password = "correct horse battery";
    const res = await form(undefined, "/signup", { name: email.split("@")[0]!, email, password, confirm: password, invite: token! });
    const cookie = res.headers.get("set-cookie")?.split(";")[0];
    expect(cookie, `signup of ${email} answered ${res.status}`).toMatch(/^holm_session=/);
    return { cookie: cookie!, email, id: await userId(admin, email) };
  }

  /** The user id of a member, read from the members page. */
  async function userId(admin: Person, email: string): Promise<string> {
    const html = await page(admin, "/members");
    const m = new RegExp(`>${email.replace(/[.]/g, "\\.")}<[\\s\\S]*?name="user" value="([^"]+)"`).exec(html);
    expect(m, `no member ${email} on the members page`).toBeTruthy();
    return m![1]!;
  }

  /** Another session of the same person: a fresh log-in. */
  async function logIn(email: string, password = "correct horse battery"): Promise<Person> {
    const res = await form(undefined, "/login", { email, password, next: "/" });
    const cookie = res.headers.get("set-cookie")?.split(";")[0];
    expect(cookie, `log-in of ${email} answered ${res.status}`).toMatch(/^holm_session=/);
    return { cookie: cookie! };
  }

  return { form, page, csrfIn, signUp, createKey, invite, inviteToken, userId, logIn };
}
