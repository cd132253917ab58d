import { ApiError } from "~/utils/api-error.server";
import { log } from "~/utils/log.server";

/**
 * Keeps a container's freeze (docker pause) apart from execs being started in it. On cgroup v1
 * an exec whose `runc init` has joined the container's cgroup when the freezer takes it is
 * frozen half-started: `runc exec` waits on it forever while holding the shim's lock, so the
 * unpause that follows waits forever too, and so does every later call about that container.
 * Seen here in a full test run: a terminal's hang-up exec raced a pause, and the box stayed
 * paused (its resume and even `docker inspect` hung) until the engine was restarted.
 *
 * Execs run side by side; a freeze waits for the execs being started to be started, and execs
 * asked for meanwhile wait for the freeze to finish (an exec in a paused container is refused
 * by the engine at once, which is the answer it would have had anyway).
 */
interface Gate {
  starting: number;
  freezing: Promise<void> | undefined;
  drained: (() => void)[];
}

export class FreezeGate {
  private readonly gates = new Map<string, Gate>();

  private gate(ref: string): Gate {
    let g = this.gates.get(ref);
    if (!g) {
      g = { starting: 0, freezing: undefined, drained: [] };
      this.gates.set(ref, g);
    }
    return g;
  }

  private forget(ref: string, g: Gate): void {
    if (g.starting === 0 && !g.freezing && this.gates.get(ref) === g) this.gates.delete(ref);
  }

  /** Runs `start` (create and start an exec in `ref`) while no freeze of `ref` is under way. */
  async exec<T>(ref: string, start: () => Promise<T>): Promise<T> {
    const g = this.gate(ref);
    while (g.freezing) await g.freezing;
    g.starting++;
    try {
      return await start();
    } finally {
      g.starting--;
      if (g.starting === 0) for (const wake of g.drained.splice(0)) wake();
      this.forget(ref, g);
    }
  }

  /** Runs `freeze` (pause `ref`) once no exec is being started in it; one freeze at a time. */
  async freeze<T>(ref: string, freeze: () => Promise<T>): Promise<T> {
    const g = this.gate(ref);
    while (g.freezing) await g.freezing;
    let done!: () => void;
    g.freezing = new Promise<void>((r) => (done = r));
    try {
      if (g.starting > 0) await new Promise<void>((r) => g.drained.push(r));
      return await freeze();
    } finally {
      g.freezing = undefined;
      done();
      this.forget(ref, g);
    }
  }
}

/** What `started` needs of an exec: dockerode's Exec. */
interface Inspectable {
  inspect(): Promise<{ Pid?: number; ExitCode?: number | null }>;
}

/**
 * Resolves once the engine has the exec's process running (or ended). An attached start answers
 * when the connection is upgraded, before runc has started the process, so the gate must wait
 * for this before it lets a freeze in. Bounded: an engine that never says gives up after 5 s.
 */
export async function started(exec: Inspectable, limitMs = 5000): Promise<void> {
  const until = Date.now() + limitMs;
  for (let wait = 2; Date.now() < until; wait = Math.min(wait * 2, 50)) {
    const info = await exec.inspect().catch(() => undefined);
    // Not `Running`: the engine sets it before it asks runc to start the process; the Pid comes after.
    if (!info || (info.Pid ?? 0) > 0 || (info.ExitCode ?? null) !== null) return;
    await new Promise((r) => setTimeout(r, wait));
  }
}

/** What `resumeOrRestart` needs of a container: dockerode's Container. */
interface Resumable {
  id: string;
  unpause(): Promise<unknown>;
  kill(): Promise<unknown>;
  wait(opts: { condition: "not-running" }): Promise<unknown>;
  start(): Promise<unknown>;
}

/**
 * Unpauses the container. When the engine holds it paused while containerd has its task running
 * ("cannot resume a running process": a freeze that raced an exec under load, once in a CI run
 * of pause-exec-race.test), nothing resumes it, and the engine clears its paused flag only when
 * the container exits: it is killed and started again (`restarted`: a new desktop).
 */
export async function resumeOrRestart(container: Resumable): Promise<"resumed" | "restarted"> {
  try {
    await container.unpause();
    return "resumed";
  } catch (err) {
    // "is not paused": another resume (another server's, ADR 0021) got there first. Running is
    // what was asked, as DockerRuntime.pause takes "already paused"; resumeUntilRunning looks.
    if (/is not paused/i.test(String((err as Error).message))) return "resumed";
    if (!/cannot resume a running process/i.test(String((err as Error).message))) throw err;
    log.warn({ err, container: container.id }, "the engine could not resume a paused container; restarting it (a new desktop)");
    await container.kill().catch(() => undefined);
    await container.wait({ condition: "not-running" });
    await container.start();
    return "restarted";
  }
}

/**
 * Unpauses the container (`resumeOrRestart`) until the engine says it is not paused. A CI run of
 * pause-exec-race.test found a container still paused after its unpause had answered (a freeze
 * that runc reported failed can still take a moment later: DockerRuntime.pause), and a box that
 * stays paused after "resume" is what a person would see: look, and resume again.
 */
export async function resumeUntilRunning(
  container: Resumable & { inspect(): Promise<{ State?: { Paused?: boolean } }> },
  attempts: number,
): Promise<"resumed" | "restarted"> {
  let how = await resumeOrRestart(container);
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (!(await container.inspect()).State?.Paused) return how;
    log.warn({ container: container.id, attempt }, "the engine still says paused after an unpause; resuming again");
    await new Promise((r) => setTimeout(r, 50 * attempt));
    // "is not paused": it resumed meanwhile (resumeOrRestart), which the next look says.
    how = await resumeOrRestart(container);
  }
  throw new ApiError("unavailable", `the engine keeps container ${container.id.slice(0, 12)} paused after ${attempts + 1} resumes`, { retryable: true });
}
