import type { z } from "zod";
import type { GrepSchema, WriteFileSchema } from "~/models/action-schema.server";
import type { GlobQuerySchema } from "~/protocol/api-box";
import { fromBase64, toBase64 } from "./bytes";
import { type HolmClient, seg } from "./holm-client";

// A box's files (000: Files and commands). Contents travel as base64; these methods take and
// give bytes or text.

export interface FileEntry {
  name: string;
  [key: string]: unknown;
}

export class FilesApi {
  constructor(private readonly c: HolmClient) {}

  /** `GET …/files?path=`: the file's bytes. */
  async read(id: string, path: string): Promise<Uint8Array> {
    const out = await this.c.request<{ path: string; contents_base64: string }>("GET", `/v1/boxes/${seg(id)}/files`, { query: { path } });
    return fromBase64(out.contents_base64);
  }

  /** `PUT …/files`: writes text (as UTF-8) or bytes. */
  write(id: string, path: string, contents: string | Uint8Array): Promise<Record<string, unknown>> {
    const body: z.input<typeof WriteFileSchema> = { path, contents_base64: toBase64(contents) };
    return this.c.request("PUT", `/v1/boxes/${seg(id)}/files`, { body });
  }

  /** `GET …/files/list?path=`. */
  list(id: string, path: string): Promise<{ entries: FileEntry[]; [key: string]: unknown }> {
    return this.c.request("GET", `/v1/boxes/${seg(id)}/files/list`, { query: { path } });
  }

  grep(id: string, body: z.input<typeof GrepSchema>): Promise<Record<string, unknown>> {
    return this.c.request("POST", `/v1/boxes/${seg(id)}/files/grep`, { body });
  }

  glob(id: string, query: z.input<typeof GlobQuerySchema>): Promise<Record<string, unknown>> {
    return this.c.request("GET", `/v1/boxes/${seg(id)}/files/glob`, { query: query as Record<string, string | number | undefined> });
  }
}
