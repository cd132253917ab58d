import type { z } from "zod";
import type { ImageBuildSchema, ImageJson } from "~/models/image.server";
import type { RuntimeCreateSchema, RuntimeJson, RuntimePatchSchema } from "~/models/runtime-store.server";
import { type HolmClient, seg } from "./holm-client";

// Runtimes and images (000: Runtimes and images; ADR 0017), typed from the routes' own schemas.

export type Runtime = RuntimeJson;
export type Image = ImageJson;
export type RuntimeCreate = z.input<typeof RuntimeCreateSchema>;
export type RuntimePatch = z.input<typeof RuntimePatchSchema>;
export type ImageBuild = z.input<typeof ImageBuildSchema>;
/** POST …/image: `state: "building"` and an empty `image` when the server queued the build. */
export interface ImageBuildResult {
  runtime: string;
  image: string;
  spec_digest: string;
  digest: string;
  state?: "building";
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class RuntimesApi {
  constructor(private readonly c: HolmClient) {}

  async list(): Promise<Runtime[]> {
    return (await this.c.request<{ runtimes: Runtime[] }>("GET", "/v1/runtimes")).runtimes;
  }
  get(name: string): Promise<Runtime> {
    return this.c.request("GET", `/v1/runtimes/${seg(name)}`);
  }
  create(body: RuntimeCreate): Promise<Runtime> {
    return this.c.request("POST", "/v1/runtimes", { body });
  }
  patch(name: string, body: RuntimePatch): Promise<Runtime> {
    return this.c.request("PATCH", `/v1/runtimes/${seg(name)}`, { body });
  }
  remove(name: string): Promise<{ name: string; deleted: true }> {
    return this.c.request("DELETE", `/v1/runtimes/${seg(name)}`);
  }
}

export class ImagesApi {
  constructor(private readonly c: HolmClient) {}

  /** Every image the server built (`GET /v1/images`), or one runtime's. */
  async list(runtime?: string): Promise<Image[]> {
    const path = runtime ? `/v1/runtimes/${seg(runtime)}/images` : "/v1/images";
    return (await this.c.request<{ images: Image[] }>("GET", path)).images;
  }
  get(runtime: string, digest: string): Promise<Image> {
    return this.c.request("GET", `/v1/runtimes/${seg(runtime)}/images/${seg(digest)}`);
  }
  remove(runtime: string, digest: string): Promise<{ runtime: string; digest: string; image: string; deleted: true }> {
    return this.c.request("DELETE", `/v1/runtimes/${seg(runtime)}/images/${seg(digest)}`);
  }
  /** Starts a build (`POST …/image`): built when it answers, unless it was queued. */
  start(runtime: string, body: ImageBuild = {}): Promise<ImageBuildResult> {
    return this.c.request("POST", `/v1/runtimes/${seg(runtime)}/image`, { body });
  }

  /**
   * Builds and waits until the image is built or failed. `onProgress` gets each image read while
   * one of this runtime's builds runs (inline, the server answers only at the end, so the
   * runtime's building images are read meanwhile).
   */
  async build(runtime: string, body: ImageBuild = {}, onProgress?: (image: Image) => void, intervalMs = 1000): Promise<Image> {
    let done = false;
    const watch = (async () => {
      while (!done && onProgress) {
        await sleep(intervalMs);
        if (done) break;
        for (const i of await this.list(runtime).catch(() => [])) if (i.state === "building") onProgress(i);
      }
    })();
    try {
      const started = await this.start(runtime, body);
      for (;;) {
        const image = await this.get(runtime, started.digest);
        if (image.state !== "building") return image;
        onProgress?.(image);
        await sleep(intervalMs);
      }
    } finally {
      done = true;
      await watch;
    }
  }
}
