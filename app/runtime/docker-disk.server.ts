import type Docker from "dockerode";

// What the disk watch (models/disk-space.server.ts, ADR 0034) asks of the local engine: where it
// keeps its containers' layers, and how much each running box wrote into its own.

/** The label every box container carries (docker.server.ts), its box id. */
const BOX_LABEL = "holm.box";

const roots = new WeakMap<Docker, string>();

/** The engine's root directory (`docker info` DockerRootDir), read once; undefined while it does not answer. */
export async function dockerRootDir(docker: Docker): Promise<string | undefined> {
  const known = roots.get(docker);
  if (known) return known;
  try {
    const info = (await (docker.info as unknown as (opts: { abortSignal: AbortSignal }) => Promise<{ DockerRootDir?: string }>).call(docker, {
      abortSignal: AbortSignal.timeout(5_000),
    })) as { DockerRootDir?: string };
    if (info.DockerRootDir) roots.set(docker, info.DockerRootDir);
    return info.DockerRootDir;
  } catch {
    return undefined;
  }
}

export interface Written {
  ref: string;
  boxId: string;
  /** Bytes in the container's writable layer (the engine's SizeRw). */
  bytes: number;
}

/**
 * Each running box's writable layer, by size. Costly (the engine walks every layer's files):
 * asked only while the disk is short, never per box while there is room.
 */
export async function writtenByBoxes(docker: Docker): Promise<Written[]> {
  const list = await docker.listContainers({ size: true, filters: { label: [BOX_LABEL], status: ["running"] }, abortSignal: AbortSignal.timeout(60_000) });
  return list.map((c) => ({ ref: c.Id, boxId: c.Labels[BOX_LABEL] ?? "", bytes: (c as { SizeRw?: number }).SizeRw ?? 0 }));
}
