import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import { databaseUrl } from "./postgres";

// Several servers behind one address: the tests' Redis (scripts/setup.sh with HOLM_TEST_REDIS=1)
// and a small round-robin proxy, as a load balancer in front of holm would be.

const REDIS_DIR = "/var/lib/holm-redis";

/** The Redis scripts/setup.sh started for the tests, or undefined when it did not. */
export function testRedisUrl(): string | undefined {
  try {
    const pass = fs.readFileSync(`${REDIS_DIR}/password`, "utf8").trim();
    const port = /^port (\d+)$/m.exec(fs.readFileSync(`${REDIS_DIR}/redis.conf`, "utf8"))?.[1];
    return port ? `redis://:${pass}@127.0.0.1:${port}` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What every server of a test cluster shares (README "Several servers"): one PostgreSQL database,
 * one Redis, one secret key and server token; `extra` adds the test's own settings.
 */
export function clusterEnv(database: string, redisUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    HOLM_STORAGE_BACKEND: "postgres",
    HOLM_DATABASE_URL: databaseUrl(database),
    HOLM_REDIS_URL: redisUrl,
    HOLM_SECRET_KEY: randomBytes(32).toString("hex"),
    HOLM_SERVER_TOKEN: randomBytes(24).toString("hex"),
    ...extra,
  };
}

export interface Proxy {
  base: string;
  /** Requests each backend answered (by index), upgrades included. */
  served: number[];
  close(): Promise<void>;
}

const unavailable = JSON.stringify({ code: "unavailable", message: "the server behind the proxy went away mid-request; try again", retryable: true });

/**
 * Round robin over `backends` (`http://host:port`) on `port`: HTTP requests and WebSocket
 * upgrades. A backend that refuses the connection is skipped for the next one, as a load
 * balancer's health check would; one that fails mid-request answers 502 with holm's error body
 * (`retryable: true`), as the client has no way to know whether it acted.
 */
export async function roundRobinProxy(port: number, backends: string[]): Promise<Proxy> {
  const targets = backends.map((b) => new URL(b));
  const served = targets.map(() => 0);
  let next = 0;
  const sockets = new Set<net.Socket>();

  /** Connects to the next backend that accepts, starting at the round robin's turn. */
  function connect(onConnect: (s: net.Socket, i: number) => void, onFail: (err: Error) => void, tried = 0, start = next++ % targets.length) {
    const i = (start + tried) % targets.length;
    const s = net.connect(Number(targets[i]!.port), targets[i]!.hostname);
    const refused = (err: NodeJS.ErrnoException) => {
      s.destroy();
      if (err.code === "ECONNREFUSED" && tried + 1 < targets.length) connect(onConnect, onFail, tried + 1, start);
      else onFail(err);
    };
    s.once("error", refused);
    s.once("connect", () => {
      s.off("error", refused);
      served[i]!++;
      sockets.add(s);
      s.once("close", () => sockets.delete(s));
      onConnect(s, i);
    });
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const fail = () => {
        if (res.headersSent) res.destroy();
        else res.writeHead(502, { "content-type": "application/json" }).end(unavailable);
      };
      const start = next++ % targets.length;
      const attempt = (tried: number) => {
        const i = (start + tried) % targets.length;
        const up = http.request(
          { host: targets[i]!.hostname, port: Number(targets[i]!.port), method: req.method, path: req.url, headers: req.headers, agent: false },
          (answer) => {
            served[i]!++;
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
            answer.once("error", fail);
          },
        );
        up.once("error", (err: NodeJS.ErrnoException) => {
          // Refused: nothing reached that server, so the next one may take the request.
          if (err.code === "ECONNREFUSED" && tried + 1 < targets.length) attempt(tried + 1);
          else fail();
        });
        up.end(body);
      };
      attempt(0);
    });
  });
  server.on("upgrade", (req, client: net.Socket, head: Buffer) => {
    sockets.add(client);
    client.once("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    connect(
      (up) => {
        const lines = [`${req.method} ${req.url} HTTP/1.1`];
        for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
        up.write(`${lines.join("\r\n")}\r\n\r\n`);
        if (head.length) up.write(head);
        up.pipe(client).pipe(up);
        up.on("error", () => client.destroy());
        up.once("close", () => client.destroy());
        client.once("close", () => up.destroy());
      },
      () => client.end("HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"),
    );
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    base: `http://127.0.0.1:${port}`,
    served,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
