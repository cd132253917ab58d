// Whether a local process is idle, from /proc: every thread asleep, and how many times its
// threads have been switched in so far (a thread that ran in between changes the count).
import fs from "node:fs";

export interface ThreadsSnapshot {
  /** False when the process is gone. */
  alive: boolean;
  /** Every thread in interruptible sleep (state S). */
  asleep: boolean;
  /** Sum of voluntary and involuntary context switches over the threads. */
  switches: number;
}

function read(path: string): string | null {
  try {
    return fs.readFileSync(path, "latin1");
  } catch {
    return null;
  }
}

/** `mainOnly`: only the thread whose id is the PID (an event loop's usual home). */
export function threadsSnapshot(pid: number, mainOnly = false): ThreadsSnapshot {
  let tids: string[];
  try {
    tids = mainOnly ? (fs.existsSync(`/proc/${pid}/task/${pid}`) ? [String(pid)] : []) : fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return { alive: false, asleep: true, switches: 0 };
  }
  if (tids.length === 0) return { alive: false, asleep: true, switches: 0 };
  let asleep = true;
  let switches = 0;
  for (const tid of tids) {
    const stat = read(`/proc/${pid}/task/${tid}/stat`);
    const status = read(`/proc/${pid}/task/${tid}/status`);
    // A thread that ended between the listing and the read no longer matters.
    if (stat === null || status === null) continue;
    // The state follows the command name, which is in parentheses and may hold anything.
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    if (state === "Z" || state === "X") continue;
    if (state !== "S") asleep = false;
    for (const m of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)$/gm)) switches += Number(m[1]);
  }
  return { alive: true, asleep, switches };
}
