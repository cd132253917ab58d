import { useState } from "react";
import { useFetcher } from "react-router";
import { CopyButton } from "./copy-button";
import type { BoxActionResult } from "./screen-control";
import { CsrfInput } from "./ui";

// The clipboard of a box's screen, for the person in control: text sent to the box's clipboard
// (through the box page's action and the agent, not VNC: see vnc-viewer.tsx), and what the box
// last copied, as noVNC reports it.

export function ClipboardPanel({ csrf, screen, boxClipboard }: { csrf: string; screen: number; boxClipboard: string | null }) {
  const fetcher = useFetcher<BoxActionResult>();
  const [text, setText] = useState("");
  const result = fetcher.data;
  return (
    <section aria-labelledby="clipboard-h" className="rounded-xl border border-slate-200 bg-white p-4 shadow-sm">
      <h2 id="clipboard-h" className="text-sm font-semibold">Clipboard</h2>
      <div className="mt-3 grid gap-4 md:grid-cols-2">
        <fetcher.Form method="post" className="space-y-2">
          <CsrfInput token={csrf} />
          <input type="hidden" name="intent" value="clipboard" />
          <input type="hidden" name="screen" value={screen} />
          <label className="block text-xs font-medium text-slate-700" htmlFor="clip-out">
            Text for the box
          </label>
          <textarea
            id="clip-out"
            name="text"
            value={text}
            onChange={(e) => setText(e.target.value)}
            rows={3}
            className="block w-full rounded-md border border-slate-300 px-2 py-1.5 font-mono text-xs focus:border-indigo-500 focus:outline-none focus:ring-1 focus:ring-indigo-500"
          />
          <div className="flex items-center gap-3">
            <button
              type="submit"
              disabled={text === "" || fetcher.state !== "idle"}
              className="rounded-md bg-white px-3 py-1.5 text-xs font-medium text-slate-800 ring-1 ring-slate-300 hover:bg-slate-50 disabled:opacity-50"
            >
              Send to box clipboard
            </button>
            <span role="status" className={`text-xs ${result && "error" in result ? "text-red-700" : "text-slate-600"}`}>
              {fetcher.state === "idle" && result ? ("error" in result ? result.error : "clipboard" in result ? result.clipboard : "") : ""}
            </span>
          </div>
        </fetcher.Form>
        <div className="space-y-2">
          <div className="flex items-center justify-between">
            <span className="text-xs font-medium text-slate-700" id="clip-in-label">
              The box's clipboard
            </span>
            {boxClipboard ? <CopyButton text={boxClipboard} /> : null}
          </div>
          <pre
            aria-labelledby="clip-in-label"
            data-testid="box-clipboard"
            className="h-[4.75rem] overflow-auto whitespace-pre-wrap break-all rounded-md bg-slate-50 px-2 py-1.5 font-mono text-xs text-slate-700 ring-1 ring-slate-200"
          >
            {boxClipboard ?? "Copy something in the box and it shows here."}
          </pre>
        </div>
      </div>
    </section>
  );
}
