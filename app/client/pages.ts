import type { z } from "zod";
import type { TabInfo } from "~/protocol/agent";
import type { ElementQuerySchema, EvaluateBodySchema, FindQuerySchema, ReadQuerySchema, ShotBodySchema, SnapshotQuerySchema } from "~/protocol/api-page";
import type { ElementOpSchema } from "~/protocol/page-actions";
import { type HolmClient, type Query, seg } from "./holm-client";

// Pages by element (000: Pages): the box's tabs, reading a page, its controls with refs, and
// one element operation. `tab` is a tab id or label; none is the front tab of screen 0.

export type ElementOp = z.input<typeof ElementOpSchema>;
export type SnapshotQuery = z.input<typeof SnapshotQuerySchema>;
export type ReadQuery = z.input<typeof ReadQuerySchema>;

export interface Snapshot {
  url: string;
  title: string;
  tab: string;
  screen: number;
  rev: number;
  elements: { ref: string; role: string; name: string; [key: string]: unknown }[];
  [key: string]: unknown;
}

export interface PageText {
  url: string;
  title: string;
  format: "markdown" | "text" | "raw";
  content: string;
  links: { text: string; url: string }[];
  cut: boolean;
}

const q = (v: object) => v as Query;

export class PagesApi {
  constructor(private readonly c: HolmClient) {}

  async tabs(id: string): Promise<(TabInfo & { screen: number })[]> {
    return (await this.c.request<{ tabs: (TabInfo & { screen: number })[] }>("GET", `/v1/boxes/${seg(id)}/pages`)).tabs;
  }

  /** `GET …/page/snapshot`: the controls (and headings) with refs. */
  snapshot(id: string, query: SnapshotQuery = {}): Promise<Snapshot> {
    return this.c.request<Snapshot>("GET", `/v1/boxes/${seg(id)}/page/snapshot`, { query: q(query) });
  }

  /** `GET …/page`: the page as markdown (default), text or raw HTML. */
  read(id: string, query: ReadQuery = {}): Promise<PageText> {
    return this.c.request<PageText>("GET", `/v1/boxes/${seg(id)}/page`, { query: q(query) });
  }

  find(id: string, query: z.input<typeof FindQuerySchema>): Promise<Record<string, unknown>> {
    return this.c.request("GET", `/v1/boxes/${seg(id)}/page/find`, { query: q(query) });
  }

  /** `POST …/page/element`: one element operation (agent input: recorded, refused during a takeover). */
  element(id: string, op: ElementOp, query: z.input<typeof ElementQuerySchema> = {}): Promise<Record<string, unknown>> {
    return this.c.request("POST", `/v1/boxes/${seg(id)}/page/element`, { query: q(query), body: op });
  }

  evaluate(id: string, body: z.input<typeof EvaluateBodySchema>, tab?: string): Promise<{ value: unknown; [key: string]: unknown }> {
    return this.c.request("POST", `/v1/boxes/${seg(id)}/page/evaluate`, { query: { tab }, body });
  }

  screenshot(id: string, body: z.input<typeof ShotBodySchema> = {}): Promise<Record<string, unknown>> {
    return this.c.request("POST", `/v1/boxes/${seg(id)}/page/screenshot`, { body });
  }
}
