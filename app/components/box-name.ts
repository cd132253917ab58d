import type { BoxJson } from "~/models/box.server";

// How the console names a box: the name people gave it, else the start of its id.

export const shortId = (id: string) => `${id.slice(0, 16)}…`;

export function boxTitle(box: Pick<BoxJson, "id" | "name">): string {
  return box.name ?? shortId(box.id);
}

/** The dialog that asks before a box is removed, naming it. */
export function removeBoxConfirm(box: Pick<BoxJson, "id" | "name">) {
  return {
    title: `Remove ${boxTitle(box)}?`,
    body: `Its desktop and files are deleted; its trace stays. (${box.id})`,
    action: "Remove box",
  };
}
