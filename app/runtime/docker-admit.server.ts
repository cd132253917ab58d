import type Docker from "dockerode";
import { badRequest } from "~/utils/api-error.server";
import { log } from "~/utils/log.server";
import { parseBytes, showBytes } from "~/utils/size";
import type { PlacementNeed } from "./runtime";

// What one Docker engine can never give a box, refused before the box is recorded (400
// `bad_request` naming the field): more CPUs than the engine's machine has (Docker itself refuses
// the container, after the box was recorded, as "Range of CPUs is from 0.01 to 2.00"), and more
// memory than it has (Docker takes such a limit and it limits nothing). Unlike a swarm's full
// nodes (503, retryable: a box may end or a node join), one machine's size does not change with
// time, so asking again cannot help.

interface Machine {
  cpus: number;
  memBytes: number;
  at: number;
}
// The machine's size, read from the engine at most once a minute (a launch costs no extra call).
const READ_EVERY_MS = 60_000;
const machines = new WeakMap<Docker, Machine>();

async function machineOf(docker: Docker): Promise<Machine | undefined> {
  const known = machines.get(docker);
  if (known && Date.now() - known.at < READ_EVERY_MS) return known;
  try {
    const info = (await (docker.info as unknown as (opts: { abortSignal: AbortSignal }) => Promise<{ NCPU?: number; MemTotal?: number }>).call(docker, {
      abortSignal: AbortSignal.timeout(5_000),
    })) as { NCPU?: number; MemTotal?: number };
    if (!info.NCPU || !info.MemTotal) return known;
    const m = { cpus: info.NCPU, memBytes: info.MemTotal, at: Date.now() };
    machines.set(docker, m);
    return m;
  } catch (err) {
    // An engine that does not answer now: the launch says so (503) when it tries.
    log.warn({ err }, "engine size not read; the box's placement is checked by the engine");
    return known;
  }
}

/** Refuses a placement `docker`'s machine can never hold (400 `bad_request` naming the field). */
export async function admitOnEngine(docker: Docker, runtime: string, need: PlacementNeed): Promise<void> {
  if (!need.cpus && !need.memoryAsked) return;
  const m = await machineOf(docker);
  if (!m) return;
  if (need.cpus && Number(need.cpus) > m.cpus) {
    throw badRequest(`placement.cpus ${need.cpus} is more than the ${runtime} runtime's machine has (${m.cpus} CPUs); ask for ${m.cpus} or less`, "placement.cpus");
  }
  if (need.memoryAsked && parseBytes(need.memory) > m.memBytes) {
    throw badRequest(`placement.memory ${need.memory} is more than the ${runtime} runtime's machine has (${showBytes(m.memBytes)})`, "placement.memory");
  }
}
