import { Holm } from "~/client/holm";
import type { RequestOptions } from "~/client/holm-client";
import { NotJsonAnswer, UsageError, useServer } from "./output";

// The client the commands use: the server from --url, else HOLM_URL, else the default; the
// credential from HOLM_TOKEN. Both are checked before any request, so a mistake in them is named
// as such (not as a server that does not answer), and errors name the server actually used.

const DEFAULT_URL = "http://127.0.0.1:8080";

/** Reads a success answer as the client does, but says when it is not JSON (a web page, another app). */
class CliHolm extends Holm {
  override async request<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.raw(method, path, opts);
    const text = await res.text();
    try {
      return (text === "" ? undefined : JSON.parse(text)) as T;
    } catch {
      throw new NotJsonAnswer(res.status, text);
    }
  }
}

export function connect(env: Record<string, string | undefined>, urlFlag: string | undefined): Holm {
  const url = urlFlag || env.HOLM_URL || DEFAULT_URL;
  const from = urlFlag ? "--url" : env.HOLM_URL ? "HOLM_URL" : "the default; set HOLM_URL or --url";
  useServer(url, from);
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    /* below */
  }
  if (parsed?.protocol !== "http:" && parsed?.protocol !== "https:") throw new UsageError(`${from === "--url" ? "--url" : "HOLM_URL"} is not an http(s) URL: ${JSON.stringify(url)}`);
  const token = tokenOf(env.HOLM_TOKEN);
  useServer(url, from, token !== undefined);
  return new CliHolm({ baseUrl: url, token });
}

/**
 * HOLM_TOKEN as a bearer: printable ASCII (a header carries nothing else). Whitespace at its ends
 * (a copied newline) is dropped, as a header value's is; anything else is refused as malformed,
 * without printing the token (it is a secret).
 */
function tokenOf(raw: string | undefined): string | undefined {
  const token = raw?.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, "");
  if (!token) return undefined;
  const bad = /[^\x21-\x7e]/.exec(token);
  if (bad) {
    const c = bad[0].charCodeAt(0);
    const what = c < 0x20 || c === 0x7f ? "a control character" : c === 0x20 ? "a space" : "a character outside printable ASCII";
    throw new UsageError(`HOLM_TOKEN is malformed: it has ${what} at position ${bad.index + 1} of ${token.length} (the token is not printed); copy the key again`);
  }
  return token;
}
