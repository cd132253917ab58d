import type { z } from "zod";
import { badRequest } from "~/utils/api-error.server";
import { readText, validate } from "./route.server";

/**
 * Reads a JSON body that carries a secret (a secret's value, a browser state's cookies): like
 * parseBody, but a body that is not JSON is refused without quoting it (JSON.parse's message
 * shows the text around the fault, which may be the secret). zod's messages name fields, never
 * values.
 */
export async function parseQuietBody<S extends z.ZodType>(request: Request, schema: S): Promise<z.output<S>> {
  const text = await readText(request);
  let raw: unknown = {};
  if (text.trim() !== "") {
    try {
      raw = JSON.parse(text);
    } catch {
      throw badRequest("the body is not valid JSON");
    }
  }
  return validate(schema, raw, "body");
}
