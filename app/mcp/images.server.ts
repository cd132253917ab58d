import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

// Images in a /v1 answer, as MCP shows them. /v1 carries an image as base64 in its JSON
// (`png_base64`, and `jpeg_base64` / `webp_base64` for a page shot): a frame, a batch's final
// frame, each `capture` or `page_shot` step's result. Left in the JSON text, an agent gets tens of
// kilobytes of base64 it cannot look at; as MCP image blocks, its client shows it the picture.
//
// Only where the tool says an image is (a spot): an answer also carries what others wrote (box
// labels, a page's values read by `evaluate`), and a key named `png_base64` there is data. Taken
// as an image anywhere, one label broke `list_boxes` for a whole workspace (the SDK refuses a
// block whose data is not base64) and a hostile page put a picture of its choosing into the
// agent's view while the value it read lost a key.

const IMAGE_KEY = /^(png|jpeg|webp)_base64$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** An object in the answer whose own `*_base64` image is shown as an image block, and its name in the text. */
export interface ImageSpot {
  path: (string | number)[];
  label: string;
}

function at(body: unknown, path: (string | number)[]): Record<string, unknown> | undefined {
  let v = body;
  for (const k of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string | number, unknown>)[k];
  }
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/**
 * The answer's JSON with each image at a spot replaced by `image: "image N below"`, then, per
 * image, a text block naming it (`image N: step 2 (capture)`) and the image block itself.
 */
export function withImages(body: unknown, spots: ImageSpot[] = []): CallToolResult {
  const found: { label: string; data: string; mimeType: string }[] = [];
  // A copy: the spots are changed in place, the caller's answer is not.
  const shown: unknown = body === undefined ? {} : spots.length ? structuredClone(body) : body;
  for (const spot of spots) {
    const holder = at(shown, spot.path);
    if (!holder) continue;
    for (const [k, x] of Object.entries(holder)) {
      const kind = IMAGE_KEY.exec(k)?.[1];
      if (!kind || typeof x !== "string" || !x.length || x.length % 4 !== 0 || !BASE64.test(x)) continue;
      found.push({ label: spot.label, data: x, mimeType: `image/${kind}` });
      delete holder[k];
      holder[holder.image === undefined ? "image" : "image_block"] = `image ${found.length} below`;
    }
  }
  const content: CallToolResult["content"] = [{ type: "text", text: JSON.stringify(shown) }];
  found.forEach((img, i) => {
    content.push({ type: "text", text: `image ${i + 1}: ${img.label}` });
    content.push({ type: "image", data: img.data, mimeType: img.mimeType });
  });
  return { content };
}
