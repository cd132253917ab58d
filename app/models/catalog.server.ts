// Applications a box can install and launch by name. `packages` are Debian packages;
// `argv` starts the application; `window_class` is what `await_window` waits for.
export interface CatalogApp {
  name: string;
  packages: string[];
  argv: string[];
  window_class: string;
  preinstalled: boolean;
}

export const CATALOG: readonly CatalogApp[] = [
  { name: "chromium", packages: [], argv: ["chromium"], window_class: "chromium", preinstalled: true },
  { name: "xterm", packages: [], argv: ["xterm"], window_class: "xterm", preinstalled: true },
  { name: "firefox", packages: ["firefox-esr"], argv: ["firefox-esr"], window_class: "firefox-esr", preinstalled: false },
  { name: "gimp", packages: ["gimp"], argv: ["gimp"], window_class: "gimp", preinstalled: false },
  { name: "libreoffice", packages: ["libreoffice"], argv: ["libreoffice"], window_class: "libreoffice", preinstalled: false },
  { name: "inkscape", packages: ["inkscape"], argv: ["inkscape"], window_class: "inkscape", preinstalled: false },
  { name: "gedit", packages: ["gedit"], argv: ["gedit"], window_class: "gedit", preinstalled: false },
  { name: "mousepad", packages: ["mousepad"], argv: ["mousepad"], window_class: "mousepad", preinstalled: false },
  { name: "thunar", packages: ["thunar"], argv: ["thunar"], window_class: "thunar", preinstalled: false },
  { name: "vlc", packages: ["vlc"], argv: ["vlc"], window_class: "vlc", preinstalled: false },
];

export function catalogApp(name: string): CatalogApp | undefined {
  return CATALOG.find((a) => a.name === name);
}

export function catalogNames(): string[] {
  return CATALOG.map((a) => a.name);
}
