import type { Actor } from "~/models/actor";
import { updateBoxMetadata } from "~/models/box-metadata.server";
import { pauseBox, removeBox, resumeBox, stopBox } from "~/models/box.server";
import { BoxPatchSchema } from "~/protocol/api-box";
import { ApiError } from "~/utils/api-error.server";
import { field } from "./form.server";
import { validate } from "./route.server";

// The lifecycle buttons of the console (list and box page) share one path to the models.
const LIFECYCLE = {
  pause: [pauseBox, "Paused."],
  resume: [resumeBox, "Resumed."],
  stop: [stopBox, "Stopped."],
  remove: [removeBox, "Removed."],
} as const;

/** Runs a lifecycle intent from a console form; undefined when the intent is not one. */
export async function lifecycleIntent(actor: Actor, intent: string, id: string): Promise<{ ok: string } | undefined> {
  const entry = LIFECYCLE[intent as keyof typeof LIFECYCLE];
  if (!entry) return undefined;
  await entry[0](actor, id);
  return { ok: entry[1] };
}

/**
 * Renames a box or sets its labels from a console form (`rename` with `name`, empty clears it;
 * `labels` with the whole set as JSON), through PATCH /v1/boxes/{id}'s schema and model; undefined
 * when the intent is neither. The list and the box page both send them.
 */
export async function metadataIntent(actor: Actor, intent: string, id: string, form: FormData): Promise<{ ok: string } | undefined> {
  if (intent === "rename") {
    const name = field(form, "name").trim();
    const box = await updateBoxMetadata(actor, id, validate(BoxPatchSchema, { name: name === "" ? null : name }, "form"));
    return { ok: box.name ? `Renamed to ${box.name}` : "Name cleared" };
  }
  if (intent === "labels") {
    let labels: unknown;
    try {
      labels = JSON.parse(field(form, "labels") || "{}");
    } catch {
      throw new ApiError("bad_request", "labels: not a JSON object");
    }
    await updateBoxMetadata(actor, id, validate(BoxPatchSchema, { labels }, "form"));
    return { ok: "Labels saved" };
  }
  return undefined;
}
