// Waiting for something the server does on its own time (a delivery, a retry, a state change).

/** `get()` until `ok` holds of it (polled every 100 ms), or an error naming `what` and the last value after `ms`. */
export async function until<T>(what: string, get: () => T | Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  let v = await get();
  while (!ok(v)) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
    v = await get();
  }
  return v;
}
