import { Form } from "react-router";
import { FEATURES } from "~/protocol/features";
import { BOX_NAME_MAX } from "~/protocol/box-console";
import { Button, CsrfInput } from "./ui";

// The console's "Launch a box": the same spec and placement as POST /v1/boxes, plus the box's
// name and labels (its `metadata`).

function NumberField({ label, name, min, max, value }: { label: string; name: string; min: number; max: number; value: number }) {
  return (
    <label className="block text-sm">
      <span className="font-medium text-slate-700">{label}</span>
      <input name={name} type="number" min={min} max={max} defaultValue={value}
        className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm" />
    </label>
  );
}

function TextField({ label, name, placeholder, maxLength }: { label: string; name: string; placeholder: string; maxLength?: number }) {
  return (
    <label className="col-span-2 block text-sm">
      <span className="font-medium text-slate-700">{label}</span>
      <input name={name} placeholder={placeholder} maxLength={maxLength}
        className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm" />
    </label>
  );
}

export function LaunchForm({ csrf, open, launching }: { csrf: string; open: boolean; launching: boolean }) {
  return (
    <details className="rounded-xl border border-slate-200 bg-white p-4 shadow-sm" open={open}>
      <summary className="cursor-pointer text-sm font-semibold">Launch a box</summary>
      <Form method="post" className="mt-4 grid grid-cols-2 gap-4 lg:grid-cols-4" aria-label="Launch a box">
        <CsrfInput token={csrf} />
        <input type="hidden" name="intent" value="launch" />
        <TextField label="Name (optional)" name="name" placeholder="checkout flow" maxLength={BOX_NAME_MAX} />
        <TextField label="Labels (optional)" name="labels" placeholder="team=web, env=dev" />
        <NumberField label="Width" name="width" min={320} max={7680} value={1280} />
        <NumberField label="Height" name="height" min={240} max={4320} value={800} />
        <NumberField label="Screens" name="screens" min={1} max={8} value={1} />
        <NumberField label="Lifetime (minutes)" name="lifetime_minutes" min={1} max={43200} value={60} />
        <fieldset className="col-span-2 lg:col-span-3">
          <legend className="text-sm font-medium text-slate-700">Features</legend>
          <div className="mt-1 flex flex-wrap gap-3">
            {FEATURES.map((f) => (
              <label key={f} className="flex items-center gap-1 text-sm">
                <input type="checkbox" name="features" value={f} defaultChecked={["wide_fonts", "video", "dock", "accessibility"].includes(f)} />
                {f}
              </label>
            ))}
          </div>
        </fieldset>
        <label className="col-span-2 flex items-center gap-2 self-end text-sm lg:col-span-1">
          <input type="checkbox" name="network" value="off" /> No network
        </label>
        <div className="col-span-2 lg:col-span-4">
          <Button type="submit" disabled={launching}>{launching ? "Launching…" : "Launch box"}</Button>
        </div>
      </Form>
    </details>
  );
}
