import type Docker from "dockerode";
import type { BoxLaunch } from "./runtime";

// A box container's named volumes (its home when persistent, a browser profile's), apart from
// docker.server.ts to keep that file readable.

/** The box's volumes: its home when persistent, and a browser profile's. */
export function mountsOf(launch: BoxLaunch): Docker.MountSettings[] | undefined {
  const mounts: Docker.MountSettings[] = [];
  if (launch.persistent) mounts.push({ Type: "volume", Source: `holm-${launch.boxId}-home`, Target: "/root" });
  if (launch.profile) {
    // Labels say whose profile a volume is (`docker volume ls`) when the engine makes it at the
    // container's create; one made already keeps its own.
    const { volume, target, labels } = launch.profile;
    mounts.push({ Type: "volume", Source: volume, Target: target, VolumeOptions: { NoCopy: false, Labels: labels, DriverConfig: { Name: "local", Options: {} } } });
  }
  return mounts.length ? mounts : undefined;
}

/**
 * Removes a named volume; one missing already is removed. `in_use`: the engine refused (409)
 * because a container, running or not, mounts it; the volume is kept.
 */
export async function removeNamedVolume(docker: Docker, name: string): Promise<"removed" | "in_use"> {
  for (let attempt = 0; ; attempt++) {
    try {
      await docker.getVolume(name).remove();
      return "removed";
    } catch (err) {
      const status = (err as { statusCode?: number }).statusCode;
      if (status === 404) return "removed";
      if (status !== 409) throw err;
      // A size measurement's container (docker-volume.server.ts) that a server ending mid-measure
      // left behind, exited, still holds the volume: it goes, and the removal is tried once more.
      if (attempt > 0 || !(await removeStaleMeasures(docker, name))) return "in_use";
    }
  }
}

/** Removes the exited measurement containers of a volume; whether there were any. */
async function removeStaleMeasures(docker: Docker, volume: string): Promise<boolean> {
  const stale = await docker.listContainers({ all: true, filters: { label: [`holm.measure=${volume}`], status: ["created", "exited", "dead"] } });
  await Promise.all(stale.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
  return stale.length > 0;
}

/** Whether the engine has a volume of that name. */
export async function volumeExists(docker: Docker, name: string): Promise<boolean> {
  try {
    await docker.getVolume(name).inspect();
    return true;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return false;
    throw err;
  }
}
