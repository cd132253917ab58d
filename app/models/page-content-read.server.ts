import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { TabPage } from "./page-browser.server";
import { inWorld } from "./page-content-world.server";

// `read` (seed 000: GET …/page, the `read` step): the page as markdown, text or HTML. Markdown is
// Mozilla's Readability (the reader view of Firefox: it keeps the article and drops navigation,
// sidebars and footers) and Turndown (HTML to markdown), both run inside the page's own browser,
// in an isolated world (page-content-world.server.ts). There they work on the live DOM, as
// rendered, with the browser's own parser and layout, and the work is the box's CPU, not a
// pause of the server's event loop: a 200 KB article is cloned, reduced and converted in the page
// in tens of milliseconds, and only the markdown crosses the wire. `text` is the page's innerText
// (what a person sees, laid out), `raw` its HTML as the browser now holds it.

export interface ReadQuery {
  format?: "markdown" | "text" | "raw";
  limit?: number;
  max_links?: number;
}

/** Characters of content a read answers with when no `limit` is given. */
export const DEFAULT_READ_LIMIT = 1_000_000;
/** Links a read lists when no `max_links` is given. */
export const DEFAULT_MAX_LINKS = 100;

let libraries: string | undefined;

/**
 * Readability and Turndown's browser build, as one expression that defines them on the world's
 * globalThis. Each file is wrapped as the CommonJS module it is (`module.exports`), so nothing
 * of theirs is global but the two constructors.
 */
function librariesScript(): string {
  if (libraries) return libraries;
  const require = createRequire(import.meta.url);
  const source = (id: string) => readFileSync(require.resolve(id), "utf8");
  const asModule = (src: string) => `(() => { const module = { exports: {} }; const exports = module.exports;\n${src}\n;return module.exports; })()`;
  libraries = `(globalThis.__holmReader = { Readability: ${asModule(source("@mozilla/readability/Readability.js"))}, TurndownService: ${asModule(
    source("turndown/lib/turndown.browser.umd.js"),
  )} }, 0)`;
  return libraries;
}

/**
 * The read itself, run in the page's world: `opts` is {format, limit, max_links}. Markdown is kept
 * until the document changes (a MutationObserver, which stops at the first change, says so) or
 * the URL does: it depends on nothing else (Readability reads a copy of the DOM, with no layout),
 * and an agent reads the same page again and again.
 */
const READ = String.raw`(async (opts) => {
  const MAX_LINKS = 10000;
  const linksOf = (root, max) => {
    const out = [];
    if (max <= 0) return out;
    const seen = new Set();
    for (const a of root.querySelectorAll("a[href]")) {
      const url = a.href;
      if (typeof url !== "string" || !url || /^(javascript|data|blob):/i.test(url) || seen.has(url)) continue;
      seen.add(url);
      const text = (a.textContent || "").replace(/\s+/g, " ").trim();
      // "…" marks a cut: secret masking takes a value's start out before it (secret-mask.server.ts).
      out.push({ text: text.length > 500 ? text.slice(0, 500) + "…" : text, url: url.slice(0, 4096) });
      if (out.length >= max) break;
    }
    return out;
  };
  let kept = false;
  const markdown = () => {
    const w = globalThis;
    if (w.__holmMd && !w.__holmMd.dirty && w.__holmMd.href === location.href) {
      kept = true;
      return w.__holmMd;
    }
    w.__holmMdWatch = w.__holmMdWatch || new MutationObserver(() => {
      if (w.__holmMd) w.__holmMd.dirty = true;
      w.__holmMdWatch.disconnect();
    });
    w.__holmMdWatch.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    const { Readability, TurndownService } = w.__holmReader;
    // Readability changes the document it reads: it gets a copy. keepClasses skips a pass over
    // every element that markdown has no use for.
    const article = document.documentElement ? new Readability(document.cloneNode(true), { serializer: (el) => el, keepClasses: true }).parse() : null;
    let root = article && article.content;
    if (!root) {
      // Not an article (a form, an app): the whole body, less what is never content.
      root = (document.body || document.documentElement || document.createElement("div")).cloneNode(true);
      for (const el of root.querySelectorAll("script, style, noscript, template")) el.remove();
    }
    const td = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-", hr: "---" });
    td.remove(["script", "style", "noscript", "template"]);
    let content = td.turndown(root);
    const title = article && article.title ? article.title.trim() : "";
    if (title && !content.startsWith("# ")) content = "# " + title + "\n\n" + content;
    return (w.__holmMd = { href: location.href, dirty: false, content, links: linksOf(root, MAX_LINKS) });
  };
  let content, links;
  if (opts.format === "raw") {
    const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) : "";
    content = doctype + (document.documentElement ? document.documentElement.outerHTML : "");
    links = linksOf(document, opts.max_links);
  } else if (opts.format === "text") {
    content = (document.body || document.documentElement || { innerText: "" }).innerText || "";
    links = linksOf(document, opts.max_links);
  } else {
    const md = markdown();
    content = md.content;
    links = md.links.slice(0, opts.max_links);
  }
  const cut = content.length > opts.limit;
  const out = { url: location.href, title: document.title, format: opts.format, content: cut ? content.slice(0, opts.limit) : content, links, cut };
  return opts.format === "markdown" ? [out, kept ? "kept" : "converted"] : [out];
})`;

/** How a markdown read got its text: `converted` now, or `kept` from the last read (unchanged page). */
export type MarkdownSource = "converted" | "kept";

/** Reads the page; `how.markdown` says whether a markdown read converted the page or kept its last text. */
export async function readPage(tp: TabPage, q: ReadQuery, how: { markdown?: MarkdownSource } = {}): Promise<Record<string, unknown>> {
  const opts = { format: q.format ?? "markdown", limit: q.limit ?? DEFAULT_READ_LIMIT, max_links: q.max_links ?? DEFAULT_MAX_LINKS };
  const scripts: Record<string, string> = opts.format === "markdown" ? { reader: librariesScript() } : {};
  const [out, source] = await inWorld<[Record<string, unknown>, MarkdownSource?]>(tp.page, `${READ}(${JSON.stringify(opts)})`, scripts, true);
  if (source) how.markdown = source;
  return { tab: tp.tab.id, ...out };
}
