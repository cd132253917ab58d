import { Link } from "react-router";
import type { ForkOrigin, ForkReplay } from "~/protocol/fork-replay";
import { shortId } from "./box-name";
import { ReplayStatus } from "./fork-panel";
import { useForkFollow } from "./use-fork-follow";

// On the trace page of a fork: where it was forked from, and its replay, live while it runs
// (the report stays once it ended: the server keeps it in the fork's trace).

export function ForkCard({ boxId, fork, workspace }: { boxId: string; fork: { from: ForkOrigin; replay: ForkReplay }; workspace: string }) {
  const { followed } = useForkFollow(workspace, !fork.replay.done);
  const now = followed(boxId, { replay: fork.replay });
  const { from } = fork;
  return (
    <section aria-label="Fork" data-testid="fork-card" className="mt-4 space-y-2 rounded-xl border border-indigo-200 bg-indigo-50 p-4 text-sm">
      <p className="text-slate-900">
        <span className="font-medium">A fork</span> of{" "}
        {from.box ? (
          <Link to={`/boxes/${from.box}/trace${from.up_to !== null ? `?seq=${from.up_to}` : ""}`} className="break-all font-mono text-indigo-700 underline">
            {shortId(from.box)}
          </Link>
        ) : (
          "a box"
        )}
        {from.up_to !== null ? ` up to entry ${from.up_to.toLocaleString("en-US")}` : ", its whole trace"}.
      </p>
      <ReplayStatus box={now.box?.state === "starting" || now.box?.state === "failed" ? now.box : undefined} replay={now.replay} />
    </section>
  );
}
