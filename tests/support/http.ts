import fs from "node:fs";
import http from "node:http";
import net from "node:net";

// Plain node:http requests for what fetch will not send as given: a chosen Host header, a body
// streamed in chunks without a length.

export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One request with exactly these headers (Host included, when given). */
export function raw(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<RawAnswer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname.replace(/^\[|\]$/g, ""), port: url.port, method, path: url.pathname + url.search, headers, agent: false },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, text }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    // A server that waits for a body it was promised but never sent must not hang the test.
    req.setTimeout(15_000, () => req.destroy(new Error(`no answer to ${method} ${path} in 15 s`)));
    req.end(body);
  });
}

/**
 * An upgrade request with only these handshake headers (no defaults: a handshake missing its key
 * or version can be sent): the status (101 when it upgraded) and the body of a refusal.
 */
export function handshake(wsUrl: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const url = new URL(wsUrl.replace(/^ws/, "http"));
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path: url.pathname + url.search, agent: false, headers: { connection: "Upgrade", upgrade: "websocket", ...headers } });
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode!, text: "" });
    });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode!, text }));
    });
    req.on("error", reject);
    req.setTimeout(15_000, () => req.destroy(new Error(`no answer to the handshake in 15 s`)));
    req.end();
  });
}

/** An upgrade request; resolves with the HTTP status the server answered (101 when it upgraded). */
export function upgrade(base: string, path: string, headers: Record<string, string> = {}): Promise<number> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      agent: false,
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        ...headers,
      },
    });
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve(res.statusCode!);
    });
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on("error", reject);
    req.end();
  });
}

export interface Offered {
  /** The status the server answered, or undefined when it never answered before `giveUpAfter`. */
  status?: number;
  text: string;
  /** Bytes the client managed to hand to the connection before it was answered or cut. */
  sent: number;
}

/**
 * Streams a body of up to `offer` bytes in 1 MiB chunks with `transfer-encoding: chunked` (no
 * length announced), over a raw socket that reads the answer while it writes, stopping as soon as
 * an answer has come or the server closes. A server that buffers whole bodies never answers in
 * time: after `giveUpAfter` bytes the client stops and reports no status.
 */
export function offerChunked(
  base: string,
  path: string,
  headers: Record<string, string>,
  opts: { offer: number; giveUpAfter: number },
): Promise<Offered> {
  const url = new URL(path, base);
  const payload = Buffer.alloc(1024 * 1024, 0x20);
  const chunk = Buffer.concat([Buffer.from(`${payload.length.toString(16)}\r\n`), payload, Buffer.from("\r\n")]);
  return new Promise((resolve) => {
    let sent = 0;
    let done = false;
    let got = Buffer.alloc(0);
    // Half-open: the server may end its side after answering while this side still writes.
    const socket = net.connect({ host: url.hostname, port: Number(url.port), allowHalfOpen: true });
    const finish = () => {
      if (done) return;
      done = true;
      socket.destroy();
      const text = got.toString("utf8");
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
      const bodyAt = text.indexOf("\r\n\r\n");
      resolve({ status: status ? Number(status) : undefined, text: bodyAt >= 0 ? text.slice(bodyAt + 4) : "", sent });
    };
    const answered = () => {
      const text = got.toString("utf8");
      const bodyAt = text.indexOf("\r\n\r\n");
      if (bodyAt < 0) return false;
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, bodyAt))?.[1];
      return length !== undefined && got.length - Buffer.byteLength(text.slice(0, bodyAt + 4)) >= Number(length);
    };
    socket.on("data", (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (answered()) finish();
    });
    socket.on("end", finish);
    socket.on("error", finish);
    socket.on("close", finish);
    const head = Object.entries({ ...headers, host: url.host, "transfer-encoding": "chunked" })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("");
    socket.write(`POST ${url.pathname}${url.search} HTTP/1.1\r\n${head}\r\n`);
    const pump = () => {
      while (!done) {
        if (sent >= opts.offer || sent >= opts.giveUpAfter) {
          // Out of bytes to offer: wait a little for an answer to what was sent.
          setTimeout(finish, 5000);
          return;
        }
        sent += payload.length;
        if (!socket.write(chunk)) {
          socket.once("drain", pump);
          return;
        }
      }
    };
    pump();
  });
}

/** The peak resident memory of a process, in bytes (VmHWM). */
export function peakRss(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /VmHWM:\s+(\d+) kB/.exec(status);
  return kb ? Number(kb[1]) * 1024 : 0;
}
