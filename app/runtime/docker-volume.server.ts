import type Docker from "dockerode";
import { demuxLog } from "./docker.server";

// Bytes of a named volume (a browser profile's, ADR 0025), read by a short container of `image`
// that mounts it read-only: the engine's own volume sizes (`docker system df`) measure every
// volume on the host at once, and the host's /var/lib/docker is not this server's to read (the
// engine may be elsewhere). The box's own image has `du`, and is on the engine already.

const MEASURE_MS = 30_000;

/** The volume's bytes (`du -sb`), or undefined when it does not exist (a mount would make it). */
export async function volumeBytes(docker: Docker, volume: string, image: string): Promise<number | undefined> {
  try {
    await docker.getVolume(volume).inspect();
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return undefined;
    throw err;
  }
  const container = await docker.createContainer({
    Image: image,
    Entrypoint: ["du", "-sb", "/p"],
    Cmd: [],
    User: "root",
    NetworkDisabled: true,
    Labels: { "holm.measure": volume },
    HostConfig: {
      NetworkMode: "none",
      // Root reads the profile's root-owned files as their owner: no capability needed.
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges"],
      Memory: 64 * 1024 ** 2,
      PidsLimit: 16,
      Mounts: [{ Type: "volume", Source: volume, Target: "/p", ReadOnly: true }],
    },
  });
  try {
    await container.start();
    let timer: NodeJS.Timeout | undefined;
    const waited = await Promise.race([
      container.wait() as Promise<{ StatusCode: number }>,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`measuring volume ${volume} took over ${MEASURE_MS} ms`)), MEASURE_MS))),
    ]).finally(() => clearTimeout(timer));
    const out = (await container.logs({ stdout: true, stderr: true, follow: false })) as unknown as Buffer;
    const text = demuxLog(out);
    const bytes = Number(/^(\d+)\s/m.exec(text)?.[1]);
    // du gives its total even when it could not read a file (status 1): that total is taken.
    if (!Number.isFinite(bytes)) throw new Error(`du on volume ${volume} answered ${waited.StatusCode}: ${text.slice(0, 200)}`);
    return bytes;
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}
