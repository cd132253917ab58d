import parseRange from "range-parser";

// Bytes that a browser's <video> seeks in: it asks with `Range` for the part it needs (and Chromium
// will not seek in an MP4 served without `accept-ranges`). One range at a time, as players ask;
// a range past the end is 416 with the size, as RFC 9110 says. Parsing is range-parser's.

export function bytesResponse(request: Request, data: Buffer, headers: Record<string, string>): Response {
  const base = { ...headers, "accept-ranges": "bytes" };
  const header = request.headers.get("range");
  const head = request.method === "HEAD";
  if (header) {
    const ranges = parseRange(data.length, header, { combine: true });
    if (ranges === -1) return new Response(null, { status: 416, headers: { ...base, "content-range": `bytes */${data.length}` } });
    if (ranges !== -2 && ranges.type === "bytes" && ranges.length === 1) {
      const { start, end } = ranges[0]!;
      const part = data.subarray(start, end + 1);
      return new Response(head ? null : new Uint8Array(part), {
        status: 206,
        headers: { ...base, "content-range": `bytes ${start}-${end}/${data.length}`, "content-length": String(part.length) },
      });
    }
    // A malformed header or several ranges: the whole body, as if none was asked.
  }
  return new Response(head ? null : new Uint8Array(data), { headers: { ...base, "content-length": String(data.length) } });
}
