import type { TraceActor, TraceEntry } from "~/models/trace-summary";

// One line per trace entry, in the words of `holm trace`: "click at 640,81", "typed 12
// characters", "ran ls /tmp → 0", "screen 0 changed", "Ada took over screen 0", "Ada gave screen
// 0 back", "removed by key agent-1". Who did it comes from the entry's `by_name`; steps an agent
// ran (acted, ran) do not repeat it on every line: the actor badge says agent or person.

type Obj = Record<string, unknown>;

const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const str = (v: unknown) => (typeof v === "string" ? v : undefined);
const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

/** Cut to `max` characters at the last space before it (mid-word only for one long word). */
function short(s: string, max = 80): string {
  if (s.length <= max) return s;
  const cut = s.slice(0, max - 1);
  const space = cut.lastIndexOf(" ");
  return `${space > max / 2 ? cut.slice(0, space) : cut}…`;
}

function point(v: unknown): string | undefined {
  const p = v as { x?: unknown; y?: unknown } | undefined;
  return p && num(p.x) !== undefined && num(p.y) !== undefined ? `${p.x},${p.y}` : undefined;
}

function chords(v: unknown): string {
  return Array.isArray(v) ? v.map(String).join(" ") : String(v ?? "");
}

function argvText(v: unknown): string {
  return Array.isArray(v) ? short(v.map(String).join(" ")) : "a command";
}

/** What one batch step did. */
export function describeStep(step: Obj | undefined): string {
  if (!step) return "a step";
  const type = str(step.type) ?? "step";
  const at = point(step.at);
  const button = str(step.button) && step.button !== "left" ? `${step.button} ` : "";
  const what = (step.what ?? {}) as Obj;
  switch (type) {
    case "click":
      return `${button}click${at ? ` at ${at}` : ""}`;
    case "double_click":
      return `${button}double click${at ? ` at ${at}` : ""}`;
    case "move":
      return `moved to ${point(step.to) ?? "a point"}`;
    case "drag":
      return `dragged from ${point(step.from) ?? "?"} to ${point(step.to) ?? "?"}`;
    case "path":
      return `moved along ${plural(Array.isArray(step.through) ? step.through.length : 0, "point")}`;
    case "mouse_down":
      return `${button}button down${at ? ` at ${at}` : ""}`;
    case "mouse_up":
      return `${button}button up${at ? ` at ${at}` : ""}`;
    case "scroll": {
      const parts = [num(step.dy) ? `${step.dy} down` : "", num(step.dx) ? `${step.dx} right` : ""].filter(Boolean).join(", ");
      return `scrolled${parts ? ` ${parts}` : ""}${at ? ` at ${at}` : ""}`;
    }
    case "type":
      return `typed ${plural(typeof step.text === "string" ? [...step.text].length : 0, "character")}`;
    case "press":
      return `pressed ${chords(step.chord)}${step.then ? ` then ${chords(step.then)}` : ""}`;
    case "key_down":
      return `held ${str(step.key) ?? "a key"} down`;
    case "key_up":
      return `let go of ${str(step.key) ?? "a key"}`;
    case "wait":
      return `waited ${num(step.ms) ?? 0} ms`;
    case "wait_still":
      return "waited for a still screen";
    case "await_window":
      return str(what.class) ? `waited for a ${what.class} window` : "waited for a window";
    case "capture":
      return "captured the screen";
    case "cursor":
      return "read the pointer position";
    case "windows":
      return "listed the windows";
    case "on_window": {
      const w = (step.what ?? {}) as Obj;
      return `window ${str(step.window) ?? "?"}: ${str(w.do) ?? "?"}`;
    }
    case "launch":
      return `launched ${str(step.app) ?? "an app"}`;
    case "apps":
      return "listed the apps";
    case "record":
      return `recording: ${str(what.do) ?? "?"}`;
    case "clipboard":
      return "chars" in step ? `set the clipboard (${plural(num(step.chars) ?? 0, "character")})` : "read the clipboard";
    case "open_url": {
      const url = str(step.url) ?? "";
      const shown = url.startsWith("data:") ? "a data: URL" : short(url, 60);
      return `opened ${shown}${step.target === "current" ? "" : " in a new tab"}`;
    }
    case "tabs":
      return "listed the tabs";
    case "on_tab":
      return `${step.close ? "closed" : "switched to"} tab ${str(step.tab) ?? "?"}`;
    case "exec":
      return `ran ${argvText(what.argv)}`;
    case "read_file":
      return `read ${short(str(step.path) ?? "a file", 60)}`;
    case "write_file":
      return `wrote ${short(str(what.path) ?? "a file", 60)}${num(what.bytes) !== undefined ? ` (${plural(num(what.bytes)!, "byte")})` : ""}`;
    case "list_files":
      return `listed ${short(str(step.path) ?? "a folder", 60)}`;
    case "grep":
      return `searched files for ${short(JSON.stringify(str(what.pattern) ?? ""), 40)}`;
    case "glob":
      return `looked for ${short(str(what.pattern) ?? "files", 40)}`;
    default:
      return type.replace(/_/g, " ");
  }
}

/**
 * Who caused an entry, as people say it: a person's name, "key agent-1", "the server token", or
 * undefined for the server's own doing and for entries recorded before names were (no `by_name`).
 */
export function causedBy(d: Obj): string | undefined {
  const by = str(d.by);
  const name = str(d.by_name);
  if (!by || !name) return undefined;
  if (by.startsWith("user:")) return name;
  if (by.startsWith("key:")) return `key ${name}`;
  return name === "server" ? undefined : `the ${name}`;
}

const byWho = (who: string | undefined) => (who ? ` by ${who}` : "");
const isPerson = (d: Obj) => str(d.by)?.startsWith("user:") === true;

function takeoverEnded(d: Obj, screen: number, who: string | undefined): string {
  const why = str(d.why) && d.why !== "given back" ? ` (${d.why})` : "";
  if (!who) return `screen ${screen} taken back${why}`;
  if (!isPerson(d)) return `screen ${screen} taken back by ${who}${why}`;
  // An owner or admin can end someone else's takeover.
  const held = str(d.held_by);
  if (!held || held === d.by) return `${who} gave screen ${screen} back${why}`;
  const holder = causedBy({ by: held, by_name: d.held_by_name });
  return `${who} took screen ${screen} back${holder ? ` from ${holder}` : ""}${why}`;
}

/** The entry in one line: "Ada took over screen 0", "removed by key agent-1". */
export function describeEntry(e: TraceEntry): string {
  const d = (e.data ?? {}) as Obj;
  const screen = e.screen ?? 0;
  const who = causedBy(d);
  switch (e.event) {
    case "box_created": {
      const desktop = ((d.spec as Obj | undefined)?.desktop ?? {}) as Obj;
      return `${num(desktop.width) && num(desktop.height) ? `created ${desktop.width}×${desktop.height}` : "created"}${byWho(who)}`;
    }
    case "acted": {
      const text = describeStep(d.step as Obj | undefined);
      return d.ok === false ? `${text} — failed${str(d.code) ? ` (${d.code})` : ""}` : text;
    }
    case "frame":
      return `screen ${screen} changed`;
    case "refused": {
      const steps = Array.isArray(d.steps) ? d.steps.length : 0;
      return `refused a batch of ${plural(steps, "step")}${str(d.reason) ? `: ${short(d.reason as string, 100)}` : ""}`;
    }
    case "ran": {
      const code = d.timed_out === true ? "timed out" : d.code === null || d.code === undefined ? "?" : String(d.code);
      return `ran ${argvText(d.argv)} → ${code}`;
    }
    case "file_written":
      return `file ${short(str(d.path) ?? "?", 80)} written`;
    case "clipboard_set":
      return `clipboard set (${plural(num(d.chars) ?? 0, "character")})`;
    case "takeover_started": {
      const shared = d.exclusive === false ? " (shared)" : "";
      return who && isPerson(d) ? `${who} took over screen ${screen}${shared}` : `screen ${screen} handed to a person${byWho(who)}${shared}`;
    }
    case "takeover_ended":
      return takeoverEnded(d, screen, who);
    case "person_input": {
      const person = who ?? "a person";
      if (d.kind === "click") return `${person} clicked at ${num(d.x) ?? "?"},${num(d.y) ?? "?"}`;
      if (d.kind === "keys") return `${person} pressed ${plural(num(d.count) ?? 0, "key")}`;
      if (d.kind === "clipboard") return `${person} pasted ${plural(num(d.bytes) ?? 0, "byte")}`;
      return who ? `${who}'s input` : "a person's input";
    }
    case "recording_started":
      return `recording of screen ${screen} started${num(d.fps) ? ` at ${d.fps} fps` : ""}${byWho(who)}`;
    case "recording_stopped": {
      const secs = num(d.duration_ms) !== undefined ? `, ${Math.round((d.duration_ms as number) / 1000)} s` : "";
      return d.kept === false
        ? `recording of screen ${screen} stopped${secs}; not kept${str(d.why) ? ` (${short(d.why as string, 80)})` : ""}`
        : `recording of screen ${screen} stopped${secs}${byWho(who)}`;
    }
    case "terminal":
      return `terminal ${str(d.phase) ?? "used"}${byWho(who)}`;
    case "browser_restarted":
      // The box's entrypoint started it again on a blank tab: its pages are gone (browser-restarts.server.ts).
      return d.after_pause === true ? `screen ${screen}'s browser restarted after its pause` : `screen ${screen}'s browser quit and was restarted`;
    case "browser_paused":
      return `screen ${screen}'s browser quit; restarts paused after ${num(d.quits_in_minute) ?? "too many"} quits in a minute${num(d.restart_in_s) !== undefined ? ` (again in ${d.restart_in_s} s)` : ""}`;
    case "ready":
      return "ready";
    case "paused":
    case "resumed":
    case "stopped":
      return `${e.event}${byWho(who)}`;
    case "gone":
      return str(d.reason) && d.reason !== "removed" ? `removed (${short(d.reason as string, 80)})${byWho(who)}` : `removed${byWho(who)}`;
    case "adopted":
      return "taken back by the server after a restart";
    case "forked_from":
      return `forked from ${str(d.box)?.slice(0, 16) ?? "a box"}…${num(d.up_to) !== undefined ? ` up to entry ${d.up_to}` : ""}${byWho(who)}`;
    case "replay_ended": {
      const ok = num(d.ok) ?? 0;
      const attempted = num(d.attempted) ?? 0;
      const why = str(d.reason) ? `: ${short(d.reason as string, 80)}` : num(d.stopped_at) !== undefined ? ` (stopped at entry ${d.stopped_at})` : "";
      return `replay ended: ${ok} of ${plural(attempted, "step")} ok${why}`;
    }
    case "failed":
      return `failed${str(d.why) ? `: ${short(d.why as string, 100)}` : ""}`;
    default:
      return e.event.replace(/_/g, " ");
  }
}

/** 12:03:15 (UTC), the same on the server and in the browser. */
export function clock(ms: number | null | undefined): string {
  return ms ? new Date(ms).toISOString().slice(11, 19) : "";
}

const BADGE: Record<TraceActor, string> = {
  agent: "bg-indigo-100 text-indigo-800",
  person: "bg-amber-100 text-amber-900",
  server: "bg-slate-200 text-slate-700",
};

/** The entry's actor (agent, person, server); `name`, when given, is who (a tooltip and for screen readers). */
export function ActorBadge({ actor, name }: { actor: TraceActor; name?: string }) {
  return (
    <span
      title={name}
      className={`inline-flex w-14 shrink-0 justify-center rounded-full px-1.5 py-0.5 text-[11px] font-medium ${BADGE[actor] ?? BADGE.server}`}
    >
      {actor}
      {name ? <span className="sr-only">: {name}</span> : null}
    </span>
  );
}
