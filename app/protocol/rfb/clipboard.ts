import { constants as zlibConstants, inflateSync } from "node:zlib";

// The extended clipboard of RFB (a ClientCutText whose length is negative), as far as the RFB
// filter (rfb-filter.ts) needs it to tell a paste from the rest: its payload starts with 4 bytes
// of flags (actions in the top byte, formats in the low ones). Caps, Request, Peek and Notify
// carry no clipboard data; Provide carries it as one zlib stream per message, of a 4-byte size
// and the data for each format in order, text (NUL-terminated UTF-8) first when present.

/** Extended clipboard (the ClientCutText with a negative length): the flags' actions and formats. */
const CLIPBOARD = { text: 1, caps: 1 << 24, request: 1 << 25, peek: 1 << 26, notify: 1 << 27, provide: 1 << 28 } as const;
/**
 * Bytes of a Provide's zlib stream kept to read the text's size (the first 4 bytes it inflates
 * to): enough for the largest dynamic Huffman header (~560 bytes), and it bounds the inflate.
 */
export const BODY_PEEK = 1024;

/** The text's size in a Provide's zlib stream (text is the first format when present), or undefined. */
export function providedTextBytes(stream: Buffer): number | undefined {
  try {
    const out = inflateSync(stream, { finishFlush: zlibConstants.Z_SYNC_FLUSH });
    if (out.length < 4) return undefined;
    // The text is NUL-terminated (the extended clipboard's rule); its size counts the NUL.
    return Math.max(0, out.readUInt32BE(0) - 1);
  } catch {
    return undefined;
  }
}

/** Whether an extended clipboard message's flags make it a Provide that carries text. */
export function isTextProvide(flags: number): boolean {
  return !(flags & CLIPBOARD.caps) && (flags & CLIPBOARD.provide) !== 0 && (flags & CLIPBOARD.text) !== 0;
}
