import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, json, startServer } from "../support/server";

// An Authorization header that is not `Bearer <token>`, as a person pasting a key tries it: the
// key alone, another scheme, curl's -u. The 401 says to send `Authorization: Bearer holm_sk_…`
// (it did not, before: "this server has no token…" when a key was sent) and never repeats the
// value. On a server with a token and on one without (open mode).

const KEY = "holm_sk_0123456789abcdefghijklmnopqrstuv";
const HEADERS: [string, string][] = [
  ["the key alone", KEY],
  ["Token <key>", `Token ${KEY}`],
  ["curl -u key:", `Basic ${Buffer.from(`${KEY}:`).toString("base64")}`],
  ["Bearer with nothing after it", "Bearer"],
];

let withToken: TestServer;
let open: TestServer;

beforeAll(async () => {
  [withToken, open] = await Promise.all([startServer(), startServer({ HOLM_SERVER_TOKEN: "" })]);
});

afterAll(async () => {
  await Promise.all([withToken?.stop(), open?.stop()]);
});

describe("a key sent without the Bearer scheme", () => {
  for (const [mode, server] of [
    ["with HOLM_SERVER_TOKEN", () => withToken],
    ["in open mode", () => open],
  ] as const) {
    it(`${mode}: 401 saying to send Authorization: Bearer holm_sk_…, without the value`, async () => {
      for (const [what, header] of HEADERS) {
        const res = await fetch(`${server().base}/v1/boxes`, { headers: { authorization: header } });
        const body = await json(res);
        expect(res.status, what).toBe(401);
        expect(body.code, what).toBe("unauthorized");
        expect(body.message, what).toContain("Authorization: Bearer holm_sk_");
        expect(body.message, what).not.toContain("has no token");
        expect(body.message, what).not.toContain("0123456789abcdef");
        if (header !== "Bearer") expect(body.message, what).not.toContain(header.split(" ").pop());
      }
    });
  }

  it("says what was wrong: a key without the word, or Basic", async () => {
    const say = async (header: string) => (await json(await fetch(`${withToken.base}/v1/boxes`, { headers: { authorization: header } }))).message as string;
    expect(await say(KEY)).toMatch(/^the Authorization header holds a key without the word Bearer; /);
    expect(await say(`Basic ${Buffer.from(`${KEY}:`).toString("base64")}`)).toMatch(/no Basic authentication/);
    // A proper Bearer still gets the answers it got.
    expect(await say(`Bearer ${KEY}`)).toBe("the API key is not valid");
    expect(await say("Bearer nope")).toMatch(/^the bearer token is not valid/);
  });
});
