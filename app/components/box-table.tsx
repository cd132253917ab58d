import { useEffect, useState } from "react";
import type { BoxJson } from "~/models/box.server";
import { removeBoxConfirm } from "./box-name";
import type { ConfirmText } from "./confirm-dialog";
import { PostForm } from "./post-form";
import { Table } from "./table";
import { duration } from "./ui";

const STATE_STYLE: Record<string, string> = {
  ready: "bg-emerald-100 text-emerald-800",
  starting: "bg-amber-100 text-amber-800",
  paused: "bg-sky-100 text-sky-800",
  stopped: "bg-slate-200 text-slate-700",
  unreachable: "bg-orange-100 text-orange-800",
  failed: "bg-red-100 text-red-800",
  gone: "bg-slate-100 text-slate-500",
};

/** Re-renders every few seconds so ages and deadlines stay true. */
function useNow(everyMs: number) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

function Act({ box, intent, label, csrf, confirm }: { box: BoxJson; intent: string; label: string; csrf: string; confirm?: ConfirmText }) {
  return (
    <PostForm csrf={csrf} intent={intent} fields={{ id: box.id }} confirm={confirm}>
      <button
        type="submit"
        aria-label={`${label} ${box.id}`}
        className={`rounded-md px-2 py-1 text-xs font-medium ${intent === "remove" ? "text-red-700 hover:bg-red-50" : "text-slate-700 hover:bg-slate-100"}`}
      >
        {label}
      </button>
    </PostForm>
  );
}

export function BoxTable({ boxes, csrf, canDrive }: { boxes: BoxJson[]; csrf: string; canDrive: boolean }) {
  const now = useNow(5000);
  return (
    <Table caption="Boxes" columns={["Box", "State", "Size", "Age", "Expires in", "Owner"]} cell="px-4 py-3" actions framed>
      {boxes.map((box) => (
        <tr key={box.id} data-box-id={box.id}>
          <td className="px-4 py-3 font-mono text-xs">
            <a className="text-indigo-700 hover:underline" href={`/boxes/${box.id}`}>{box.id.slice(0, 16)}…</a>
          </td>
          <td className="px-4 py-3">
            <span className={`inline-flex rounded-full px-2 py-0.5 text-xs font-medium ${STATE_STYLE[box.state] ?? ""}`} title={box.reason}>
              {box.state}
            </span>
          </td>
          <td className="px-4 py-3 tabular-nums">
            {box.width}×{box.height}
            {box.screens > 1 ? ` · ${box.screens} screens` : ""}
          </td>
          <td className="px-4 py-3 tabular-nums">{duration(now - box.created_at_ms)}</td>
          <td className="px-4 py-3 tabular-nums">{duration(box.expires_at_ms - now)}</td>
          <td className="px-4 py-3 text-slate-600">{box.owner ?? "server token"}</td>
          <td className="px-4 py-3">
            {canDrive ? (
              <div className="flex justify-end gap-1">
                {box.state === "ready" ? <Act box={box} intent="pause" label="Pause" csrf={csrf} /> : null}
                {box.state === "paused" || box.state === "stopped" ? <Act box={box} intent="resume" label="Resume" csrf={csrf} /> : null}
                {box.state === "ready" || box.state === "paused" ? <Act box={box} intent="stop" label="Stop" csrf={csrf} /> : null}
                <Act box={box} intent="remove" label="Remove" csrf={csrf} confirm={removeBoxConfirm(box)} />
              </div>
            ) : null}
          </td>
        </tr>
      ))}
    </Table>
  );
}
