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
