// The main frame's prefix in Playwright's refs. Playwright prefixes a ref with its frame's number
// and gives the main frame a new number at each navigation to a new document but the first from
// about:blank, so a page opened in the front tab, or reloaded, had refs like an iframe's (`f1e2`).
// The API shows the main frame's refs without it (page-element-snap.server.ts).

/** What these read of a snapshot's node. */
interface RefNode {
  role: string;
  ref?: string;
  children?: (RefNode | string)[];
}

/** Playwright's ref: its frame's prefix (none in the main frame's first document) and the rest. */
const RAW_REF_RE = /^(f\d+)?(e\d+)$/;

/** The prefix of the refs of a whole-page tree's main frame: those of nodes outside any iframe. */
export function mainPrefixIn(nodes: (RefNode | string)[]): string | undefined {
  for (const n of nodes) {
    if (typeof n === "string") continue;
    const m = n.ref ? RAW_REF_RE.exec(n.ref) : null;
    if (m) return m[1] ?? "";
    // An iframe's own node is the page's; what is under it is its document's.
    if (n.role === "iframe") continue;
    const found = mainPrefixIn(n.children ?? []);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Whether a ref in the tree has a frame's prefix (it may be the main frame's). */
export function hasPrefixed(nodes: (RefNode | string)[]): boolean {
  return nodes.some((n) => typeof n !== "string" && (/^f\d/.test(n.ref ?? "") || hasPrefixed(n.children ?? [])));
}

/** Takes the main frame's prefix out of its refs (an iframe's refs have prefixes of their own). */
export function renameRefs(nodes: (RefNode | string)[], prefix: string): void {
  for (const n of nodes) {
    if (typeof n === "string") continue;
    const m = n.ref ? RAW_REF_RE.exec(n.ref) : null;
    if (m && m[1] === prefix) n.ref = m[2];
    if (n.children) renameRefs(n.children, prefix);
  }
}
