// Bodies the hot path (server/hot-path.ts, ADR 0015) handles as text, not through web streams.
// A request's body is read whole before the route runs, and an answer's JSON is made as text:
// reading either back through the Request's or Response's stream cost ~75 µs and garbage per
// one-click batch (measured: Request with a body + text() 61 µs against 12 µs; Response.json +
// arrayBuffer() 46 µs against 19 µs). Every other way in (React Router) uses the streams as
// before; the text kept here is the same bytes.

const requestTexts = new WeakMap<Request, string>();
const answerTexts = new WeakMap<Response, string>();

/** `request` came with this body, already read (its own body is empty). */
export function withBodyText(request: Request, text: string): Request {
  requestTexts.set(request, text);
  return request;
}

/** The body text `withBodyText` kept for `request`, if any. */
export function bodyTextOf(request: Request): string | undefined {
  return requestTexts.get(request);
}

/** As `Response.json`, with its text kept for `answerTextOf`. */
export function jsonResponse(body: unknown, init?: ResponseInit): Response {
  const text = JSON.stringify(body);
  const headers = new Headers(init?.headers);
  if (!headers.has("content-type")) headers.set("content-type", "application/json");
  const res = new Response(text, { ...init, headers });
  answerTexts.set(res, text);
  return res;
}

/** The JSON text of an answer made by `jsonResponse`, if it was. */
export function answerTextOf(res: Response): string | undefined {
  return answerTexts.get(res);
}
