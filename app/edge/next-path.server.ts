// Where log-in sends a person afterwards (`?next=`): a path on this server, never another site.
// Browsers read `/\evil`, `/\t/evil` and `//evil` as another host, so the value is parsed the
// way a browser would and kept only when it stays on this origin.

const BASE = "http://holm.invalid";

export function safeNext(next: string | null | undefined): string {
  if (!next || !next.startsWith("/")) return "/";
  let url: URL;
  try {
    url = new URL(next, BASE);
  } catch {
    return "/";
  }
  if (url.origin !== BASE) return "/";
  const path = url.pathname + url.search + url.hash;
  // `/.//evil` normalizes to `//evil`, which a browser would again read as a host.
  return path.startsWith("//") || path.startsWith("/\\") ? "/" : path;
}
