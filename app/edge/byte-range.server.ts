import parseRange from "range-parser";

// Bytes that a browser's <video> seeks in: it asks with `Range` for the part it needs (and Chromium
// will not seek in an MP4 served without `accept-ranges`). One range at a time, as players ask;
// a range past the end is 416 with the size, as RFC 9110 says. Parsing is range-parser's.
//
// The bytes are read from the store as they are sent, a chunk at a time (`read`): a recording is
// up to 64 MB, and reading it whole for each request (a player asks many; a viewer may ask any)
// held the event loop for hundreds of milliseconds and its memory for each request at once.

/** The most read from the store in one go: a recording's part, a millisecond or so to read. */
export const READ_CHUNK = 1024 * 1024;

/** Reads `length` bytes from `start`; fewer means the bytes are gone (pruned meanwhile). */
export type ReadPart = (start: number, length: number) => Promise<Uint8Array>;

export function bytesResponse(request: Request, size: number, read: ReadPart, headers: Record<string, string>): Response {
  const base = { ...headers, "accept-ranges": "bytes" };
  const header = request.headers.get("range");
  const head = request.method === "HEAD";
  let start = 0;
  let end = size - 1;
  let partial = false;
  if (header) {
    const ranges = parseRange(size, header, { combine: true });
    if (ranges === -1) return new Response(null, { status: 416, headers: { ...base, "content-range": `bytes */${size}` } });
    // A malformed header or several ranges: the whole body, as if none was asked.
    if (ranges !== -2 && ranges.type === "bytes" && ranges.length === 1) {
      ({ start, end } = ranges[0]!);
      partial = true;
    }
  }
  const length = Math.max(0, end - start + 1);
  const body = head || length === 0 ? null : chunks(start, length, read);
  return partial
    ? new Response(body, { status: 206, headers: { ...base, "content-range": `bytes ${start}-${end}/${size}`, "content-length": String(length) } })
    : new Response(body, { headers: { ...base, "content-length": String(length) } });
}

/** A stream of [start, start + length), read a chunk at a time as the client takes it. */
function chunks(start: number, length: number, read: ReadPart): ReadableStream<Uint8Array> {
  let at = start;
  const stop = start + length;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        // Up to the next multiple of READ_CHUNK: a store keeping the bytes in parts of that size
        // (recordings, migration 0021) reads one part per chunk.
        const n = Math.min(READ_CHUNK - (at % READ_CHUNK), stop - at);
        const part = await read(at, n);
        // The length was promised: a cut body must fail, not end early as if complete.
        if (part.length !== n) return controller.error(new Error(`the bytes at ${at} are gone`));
        controller.enqueue(part);
        at += n;
        if (at >= stop) controller.close();
      },
    },
    { highWaterMark: 0 },
  );
}
