import { useEffect, useRef, useState } from "react";
import { Form } from "react-router";
import { type Feature, FEATURES } from "~/protocol/features";
import { BOX_NAME_MAX } from "~/protocol/box-console";
import { fieldError } from "./action-banner";
import { Button, CsrfInput, type FieldError, FieldMessage, useInvalid } from "./ui";

// The console's "Launch a box": the same spec and placement as POST /v1/boxes, plus the box's
// name and labels (its `metadata`). Every field says in plain words what it does; a feature
// that adds packages to the image says so, since a new combination builds an image first.

/** What each desktop feature gives the box, for people choosing them. */
export const FEATURE_HELP: Record<Feature, { title: string; help: string }> = {
  wide_fonts: { title: "Wide fonts", help: "Chinese, Japanese, Korean and emoji fonts, so pages in any language show real letters, not boxes." },
  video: { title: "Screen recording", help: "Lets agents record the screen to a video file (ffmpeg)." },
  dock: { title: "Taskbar", help: "A taskbar at the bottom listing open windows, with no clock, so a still screen stays still." },
  accessibility: { title: "Accessibility tree", help: "Exposes native widgets to assistive tools (AT-SPI) and builds Chromium's accessibility tree." },
  audio: { title: "Sound", help: "A sound server (PulseAudio) so apps that need audio can play it." },
  x11_apps: { title: "Classic X apps", help: "xeyes, xclock, xcalc and friends: small apps for trying input and windows." },
};

const DEFAULT_FEATURES: readonly Feature[] = ["wide_fonts", "video", "dock", "accessibility"];

const input = "mt-1 block w-full rounded-md border border-slate-300 bg-white px-2 py-1.5 text-sm";

function Help({ id, children }: { id: string; children: string }) {
  return (
    <span id={id} className="mt-1 block text-xs text-slate-600">
      {children}
    </span>
  );
}

type FieldProps = { label: string; name: string; help: string; error: FieldError | undefined };

function NumberField({ label, name, min, max, value, help, error }: FieldProps & { min: number; max: number; value: number }) {
  const invalid = useInvalid(name, error, `${name}-help`);
  return (
    <label className="block min-w-0 text-sm">
      <span className="font-medium text-slate-700">{label}</span>
      <input name={name} type="number" min={min} max={max} defaultValue={value} {...invalid} className={input} />
      <Help id={`${name}-help`}>{help}</Help>
      <FieldMessage name={name} error={error} />
    </label>
  );
}

function TextField({ label, name, placeholder, maxLength, help, error }: FieldProps & { placeholder: string; maxLength?: number }) {
  const invalid = useInvalid(name, error, `${name}-help`);
  return (
    <label className="col-span-2 block min-w-0 text-sm">
      <span className="font-medium text-slate-700">{label}</span>
      <input name={name} placeholder={placeholder} maxLength={maxLength} {...invalid} className={input} />
      <Help id={`${name}-help`}>{help}</Help>
      <FieldMessage name={name} error={error} />
    </label>
  );
}

/**
 * `resetKey`: a new value empties the fields (after a launch went through); the panel stays open.
 * `answer`: the page's shown answer; a refusal about one of the fields is said there (fieldError).
 */
export function LaunchForm({ csrf, open, launching, resetKey, answer }: { csrf: string; open: boolean; launching: boolean; resetKey?: number; answer?: object }) {
  // Open at first when there is nothing else to see; from then on the person opens and closes it
  // (a launch that makes the list non-empty does not snap it shut under them).
  const [initiallyOpen] = useState(open);
  // Emptied in place rather than drawn anew (a `key`): the Launch button that had the focus keeps it.
  const form = useRef<HTMLFormElement>(null);
  useEffect(() => {
    if (resetKey) form.current?.reset();
  }, [resetKey]);
  const err = (name: string) => fieldError(answer, name);
  return (
    <details className="rounded-xl border border-slate-200 bg-white p-4 shadow-sm" open={initiallyOpen}>
      <summary className="cursor-pointer text-sm font-semibold">Launch a box</summary>
      <Form
        ref={form}
        method="post"
        className="mt-4 grid grid-cols-2 gap-4 lg:grid-cols-4"
        aria-label="Launch a box"
        // One launch at a time; the button is not `disabled`, which would drop its focus on the body.
        onSubmit={(e) => {
          if (launching) e.preventDefault();
        }}
      >
        <CsrfInput token={csrf} />
        <input type="hidden" name="intent" value="launch" />
        <TextField label="Name (optional)" name="name" placeholder="checkout flow" maxLength={BOX_NAME_MAX} error={err("name")}
          help="How the box shows in the list. Change it any time." />
        <TextField label="Labels (optional)" name="labels" placeholder="team=web, env=dev" error={err("labels")}
          help="key=value pairs, separated by commas, to filter the list by." />
        <NumberField label="Width" name="width" min={320} max={7680} value={1280} error={err("width")} help="Screen width in pixels." />
        <NumberField label="Height" name="height" min={240} max={4320} value={800} error={err("height")} help="Screen height in pixels." />
        <NumberField label="Screens" name="screens" min={1} max={8} value={1} error={err("screens")}
          help="Each screen is its own display with its own Chromium." />
        <NumberField label="Lifetime (minutes)" name="lifetime_minutes" min={1} max={43200} value={60} error={err("lifetime_minutes")}
          help="The box is removed this long after launch; its trace stays." />
        <label className="col-span-2 block min-w-0 text-sm">
          <span className="font-medium text-slate-700">Display server</span>
          <select name="server" defaultValue="x11" aria-describedby="server-help" className={input}>
            <option value="x11">X11 (Xvfb and fluxbox)</option>
            <option value="wayland">Wayland (headless sway)</option>
          </select>
          <Help id="server-help">Wayland boxes run X apps through XWayland; their taskbar is waybar.</Help>
        </label>
        <fieldset className="col-span-2 min-w-0 lg:col-span-4">
          <legend className="text-sm font-medium text-slate-700">Features</legend>
          <p className="text-xs text-slate-600">A combination the server has not built before builds its image first (a minute or so).</p>
          <div className="mt-2 grid gap-2 sm:grid-cols-2 lg:grid-cols-3">
            {FEATURES.map((f) => (
              <label key={f} className="flex min-w-0 items-start gap-2 rounded-md p-1 text-sm hover:bg-slate-50">
                <input type="checkbox" name="features" value={f} defaultChecked={DEFAULT_FEATURES.includes(f)} aria-describedby={`feature-${f}-help`} className="mt-0.5" />
                <span className="min-w-0">
                  <span className="font-medium">{FEATURE_HELP[f].title}</span> <code className="text-xs text-slate-600">{f}</code>
                  <Help id={`feature-${f}-help`}>{FEATURE_HELP[f].help}</Help>
                </span>
              </label>
            ))}
          </div>
        </fieldset>
        <label className="col-span-2 flex min-w-0 items-start gap-2 text-sm lg:col-span-4">
          <input type="checkbox" name="network" value="off" aria-describedby="network-help" className="mt-0.5" />
          <span>
            <span className="font-medium">No network</span>
            <Help id="network-help">The box reaches nothing outside it: no web, no other boxes, not this server.</Help>
          </span>
        </label>
        <div className="col-span-2 lg:col-span-4">
          <Button type="submit" aria-disabled={launching || undefined}>{launching ? "Launching…" : "Launch box"}</Button>
        </div>
      </Form>
    </details>
  );
}
