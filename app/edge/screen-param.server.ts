import { data } from "react-router";

/**
 * The screen a console page's `?screen=` names (0 without one). A screen the box does not have
 * (an old link, a typo) is the console's not-found page, as `/v1` answers 404 for it, saying which
 * screens the box has, with a link to its first, rather than screen 0 under an address that
 * names another.
 */
/** How much of a `?screen=` value the not-found page repeats. */
const SHOWN_MAX = 8;

export function screenOfUrl(request: Request, box: { id: string; screens: number }, page: string): number {
  const raw = new URL(request.url).searchParams.get("screen");
  if (raw === null) return 0;
  if (/^[0-9]{1,2}$/.test(raw) && Number(raw) < box.screens) return Number(raw);
  const has = box.screens === 1 ? "one screen, screen 0" : `${box.screens} screens, 0 to ${box.screens - 1}`;
  // The value is whoever wrote the link's: on our own page it is quoted and cut short, so a
  // crafted link cannot make the console say a sentence of its choosing.
  const named = raw.length > SHOWN_MAX ? `${raw.slice(0, SHOWN_MAX)}…` : raw;
  throw data(
    { detail: `Box ${box.id} has ${has}; there is no screen "${named}".`, link: { href: page, label: "Open its screen 0" } },
    { status: 404 },
  );
}

/** What a box id looks like (models/box.server.ts): anything else is not repeated on our page. */
const BOX_ID = /^box_[0-9a-f]{32}$/;

/**
 * The console's not-found page for a box address that names no box the person may see (never
 * made, removed long ago, another's workspace: the same words for all, as `/v1` answers 404).
 * The id is named only when it is one: a crafted link cannot make the console say its words.
 */
export function noSuchBox(id: string) {
  const which = BOX_ID.test(id) ? `There is no box ${id} in your workspaces.` : "There is no box at this address.";
  return data({ detail: `${which} The address may be mistyped, or the box was removed long ago.` }, { status: 404 });
}
