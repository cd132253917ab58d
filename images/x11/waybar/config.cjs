// Writes waybar's config for a Wayland box's dock (run by entrypoint.sh with the box's node; ADR
// 0030): a launcher per spec.apps desktop entry, then the taskbar. A launcher runs the app's argv
// as its desktop entry does (NUL-separated, through no shell quoting); app names are [a-z0-9_-].
const fs = require("fs");
const path = require("path");
// waybar's format is fmt's (braces) and its labels Pango markup.
const label = (s) => s.replace(/[{}]/g, (b) => b + b).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const apps = process.argv
  .slice(2)
  .filter((f) => path.basename(f).startsWith("holm-app-") && fs.existsSync(f))
  .map((f) => {
    const name = path.basename(f, ".desktop").slice("holm-app-".length);
    // Lines split at "\n" alone, as the entry is written: a regular expression's ^, $ and . also
    // take U+2028/U+2029 for line ends and would cut the title there.
    const line = fs.readFileSync(f, "utf8").split("\n").find((l) => l.startsWith("Name="));
    const title = (line && line.slice("Name=".length).replace(/\r$/, "")) || name;
    return { name, title };
  })
  .filter((a) => /^[a-z0-9][a-z0-9_-]{0,31}$/.test(a.name));
const config = {
  layer: "top",
  position: "bottom",
  height: 30,
  "modules-left": [...apps.map((a) => `custom/app-${a.name}`), "wlr/taskbar"],
  "wlr/taskbar": { format: "{title}", "max-length": 28, "on-click": "activate", tooltip: false },
};
for (const a of apps) {
  config[`custom/app-${a.name}`] = { format: label(a.title), tooltip: false, "on-click": `xargs -0 -a /opt/holm/apps/${a.name}.argv env --` };
}
process.stdout.write(JSON.stringify(config, null, 1));
