import type { z } from "zod";
import type { BoxMetadataSchema, BoxPatchSchema } from "~/protocol/api-box";
import { unsupported } from "~/utils/api-error.server";
import { db } from "~/utils/db.server";
import type { Actor } from "./actor";
import type { NormalSpec } from "./spec.server";
import { type BoxJson, type BoxRow, boxChanges, loadRow, requireSettled, serial, toBoxJson, visibleRow } from "./box-record.server";

// A box's name and labels (holm's addition to the seed, issue 14): what people call a box and
// how they group it in the console; and whether its screens are recorded while a person holds
// them (issue 18, takeover-recording.server.ts). Set at create (`metadata`) and changed by PATCH
// /v1/boxes/{id} or the console's list, both through updateBoxMetadata. They live in the store
// only: the container's holm.name / holm.labels labels are written at create (Docker cannot
// relabel a container), so they are a hint for adoption, not the truth.

export type BoxMetadata = z.output<typeof BoxMetadataSchema>;
export type BoxPatch = z.output<typeof BoxPatchSchema>;

/** Labels in a stable order (by key), so equal sets are equal JSON. */
function labelsJson(labels: Record<string, string>): string | null {
  const keys = Object.keys(labels).sort();
  if (keys.length === 0) return null;
  return JSON.stringify(Object.fromEntries(keys.map((k) => [k, labels[k]!])));
}

/** The row's columns for a new box's metadata. */
export function metadataColumns(meta: BoxMetadata | undefined): Pick<BoxRow, "name" | "labels_json"> {
  return { name: meta?.name ?? null, labels_json: meta?.labels ? labelsJson(meta.labels) : null };
}

/**
 * Renames a box (`name: null` clears it) and/or replaces its labels, and pushes the change to
 * live lists. A box that is `starting` or `failed` refuses with 409 as other calls do (the seed);
 * a name can be given at create instead.
 */
export async function updateBoxMetadata(actor: Actor, id: string, patch: BoxPatch): Promise<BoxJson> {
  const row = await visibleRow(actor, id);
  requireSettled(row);
  // In the box's chain, so a lifecycle change running now does not push the old name after ours.
  return serial(id, async () => {
    const set: Partial<Pick<BoxRow, "name" | "labels_json" | "record_takeovers">> = {};
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.labels !== undefined) set.labels_json = labelsJson(patch.labels);
    if (patch.record_takeovers !== undefined) {
      // The recording is the box's own (ffmpeg in the box, seed 000's recording routes).
      const spec = JSON.parse(row.spec_json) as NormalSpec;
      if (patch.record_takeovers && !spec.desktop.features.includes("video")) {
        throw unsupported("record_takeovers records the screen in the box, which needs the box's video feature (spec.desktop.features)");
      }
      set.record_takeovers = patch.record_takeovers ? 1 : 0;
    }
    if (Object.keys(set).length === 0) return toBoxJson((await loadRow(id)) ?? row);
    await db().updateTable("box").set(set).where("id", "=", id).execute();
    const cur = (await loadRow(id))!;
    const json = toBoxJson(cur);
    boxChanges.emit("change", json);
    return json;
  });
}
