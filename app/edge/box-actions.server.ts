import type { Actor } from "~/models/actor";
import { updateBoxMetadata } from "~/models/box-metadata.server";
import { type BoxJson, pauseBox, removeBox, resumeBox, stopBox } from "~/models/box.server";
import { assertMayChangeBox } from "~/models/takeover.server";
import { BoxPatchSchema } from "~/protocol/api-box";
import { ApiError } from "~/utils/api-error.server";
import { field } from "./form.server";
import { validate } from "./route.server";

// Every lifecycle change of a box, from the console's buttons (list and box page) and from /v1
// (POST …/pause|resume|stop, DELETE), goes through `changeBox`, so the takeover check cannot be
// on one path and missing on the other (a member's console pause went through while /v1 refused
// it: docs/security.md, "Takeover means hands off"). `doing` names the change in the refusal;
// resume has none (it only brings back what the box was).
const LIFECYCLE = {
  pause: { verb: pauseBox, doing: "pausing the box", done: "Paused." },
  resume: { verb: resumeBox, doing: undefined, done: "Resumed." },
  stop: { verb: stopBox, doing: "stopping the box", done: "Stopped." },
  remove: { verb: removeBox, doing: "removing the box", done: "Removed." },
} as const;

export type Lifecycle = keyof typeof LIFECYCLE;

/** Pauses, resumes, stops or removes a box, refused (409 denied) while another person holds a screen of it. */
export async function changeBox(actor: Actor, change: Lifecycle, id: string): Promise<BoxJson> {
  const { verb, doing } = LIFECYCLE[change];
  if (doing) await assertMayChangeBox(actor, id, doing);
  return verb(actor, id);
}

/** Runs a lifecycle intent from a console form; undefined when the intent is not one. */
export async function lifecycleIntent(actor: Actor, intent: string, id: string): Promise<{ ok: string } | undefined> {
  if (!Object.hasOwn(LIFECYCLE, intent)) return undefined;
  await changeBox(actor, intent as Lifecycle, id);
  return { ok: LIFECYCLE[intent as Lifecycle].done };
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
