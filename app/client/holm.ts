import { BoxesApi } from "./boxes";
import { FilesApi } from "./files";
import { EventsApi, TraceApi } from "./history";
import { type ClientOptions, HolmClient } from "./holm-client";
import { PagesApi } from "./pages";
import { ImagesApi, RuntimesApi } from "./runtimes";
import { ScreensApi } from "./screens";

// The typed client: HolmClient's request/raw, with the contract's operations grouped as the seed
// groups them. `new Holm({ baseUrl, token })`, then `holm.boxes.create()`, `holm.screens.batch()`,
// `holm.trace.follow()`, … (the CLI, the tests and the MCP tools use it).

export class Holm extends HolmClient {
  readonly boxes = new BoxesApi(this);
  readonly screens = new ScreensApi(this);
  readonly files = new FilesApi(this);
  readonly pages = new PagesApi(this);
  readonly trace = new TraceApi(this);
  readonly events = new EventsApi(this);
  readonly runtimes = new RuntimesApi(this);
  readonly images = new ImagesApi(this);

  /** From HOLM_URL (default http://127.0.0.1:8080) and HOLM_TOKEN. */
  static fromEnv(env: Record<string, string | undefined>, opts: Partial<ClientOptions> = {}): Holm {
    return new Holm({ baseUrl: env.HOLM_URL || "http://127.0.0.1:8080", token: env.HOLM_TOKEN || undefined, ...opts });
  }

  /** `GET /v1/health` (no token needed). */
  health(): Promise<{ ok: boolean; service: string }> {
    return this.request("GET", "/v1/health");
  }

  /** `GET /v1/openapi.json` (no token needed). */
  openapi(): Promise<Record<string, unknown>> {
    return this.request("GET", "/v1/openapi.json");
  }
}

export { HolmApiError, HolmClient } from "./holm-client";
export type * from "./boxes";
export type * from "./files";
export type * from "./history";
export type * from "./pages";
export type * from "./runtimes";
export type * from "./screens";
