import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

// Images in a /v1 answer, as MCP shows them. /v1 carries an image as base64 in its JSON
// (`png_base64`, and `jpeg_base64` / `webp_base64` for a page shot): a frame, a batch's final
// frame, each `capture` or `page_shot` step's result. Left in the JSON text, an agent gets tens of
// kilobytes of base64 it cannot look at; as MCP image blocks, its client shows it the picture.

const IMAGE_KEY = /^(png|jpeg|webp)_base64$/;

/** Names an image by where it sat in the answer (a JSON path such as `results.2`), for the text before it. */
export type Where = (path: (string | number)[]) => string;

const byPath: Where = (path) => (path.length ? path.join(".") : "the answer");

/**
 * The answer's JSON with each image replaced by `image: "image N below"`, then, per image, a text
 * block naming it (`image N: step 2 (capture)`) and the image block itself.
 */
export function withImages(body: unknown, where: Where = byPath): CallToolResult {
  const found: { label: string; data: string; mimeType: string }[] = [];
  const strip = (v: unknown, path: (string | number)[]): unknown => {
    if (Array.isArray(v)) return v.map((x, i) => strip(x, [...path, i]));
    if (v === null || typeof v !== "object") return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const kind = IMAGE_KEY.exec(k)?.[1];
      if (kind && typeof x === "string" && x.length > 0) {
        found.push({ label: where(path), data: x, mimeType: `image/${kind}` });
        out.image = `image ${found.length} below`;
      } else {
        out[k] = strip(x, [...path, k]);
      }
    }
    return out;
  };
  const shown = body === undefined ? {} : strip(body, []);
  const content: CallToolResult["content"] = [{ type: "text", text: JSON.stringify(shown) }];
  found.forEach((img, i) => {
    content.push({ type: "text", text: `image ${i + 1}: ${img.label}` });
    content.push({ type: "image", data: img.data, mimeType: img.mimeType });
  });
  return { content };
}
