import Docker from "dockerode";
import { fingerprint, sshClient, sshTarget } from "../app/runtime/ssh-engine.server";
import { remoteClient } from "../app/runtime/remote-docker.server";
import { startRemoteEngine } from "../tests/support/remote-engine";
import { startSshd } from "../tests/support/ssh-engine";
import { RUN_LABEL } from "../tests/support/server";
import { now, summarize } from "./stats";

// The Docker API of one engine over three transports (ADR 0019, "ssh:// engines"): TLS on tcp,
// docker-modem's own ssh agent (a new SSH connection per HTTP request, then `docker system
// dial-stdio`), and ours (dial-stdio channels on one shared SSH connection, kept alive). A
// request is `GET /_ping` or a container inspect; a "tunnel" is what each connection to a
// remote box costs: an exec created, then started with its stream hijacked.

const N = Number(process.env.BENCH_N ?? 30);

export async function benchSshTransport() {
  const engine = await startRemoteEngine(`bench-ssh-${RUN_LABEL}`);
  const sshd = await startSshd(engine).catch(async (err) => {
    await engine.stop();
    throw err;
  });
  const ours = sshClient(sshTarget(sshd.host, { ssh_key: sshd.key }, sshd.hostKey));
  const streamlocal = sshClient({ ...sshTarget(sshd.host, { ssh_key: sshd.key }, sshd.hostKey), socket: engine.socket });
  const u = new URL(sshd.host);
  const pin = sshd.fingerprint;
  const builtin = new Docker({
    protocol: "ssh",
    host: u.hostname,
    port: Number(u.port),
    username: "root",
    sshOptions: { privateKey: sshd.key, hostVerifier: (key: Buffer) => fingerprint(key) === pin },
  } as Docker.DockerOptions);
  const clients: [string, Docker][] = [
    ["tcp+TLS", remoteClient(engine.host, engine.tls)],
    ["ssh, docker-modem's agent", builtin],
    ["ssh, shared connection", ours.docker],
    ["ssh, shared connection, streamlocal", streamlocal.docker],
  ];
  try {
    // A small container to exec in: the box image is not needed for this.
    const base = (await engine.docker.listImages()).find((i) => i.RepoTags?.some((t) => t.startsWith("holm-base:")));
    let image = base?.RepoTags?.[0];
    if (!image) {
      const local = new Docker({ socketPath: "/var/run/docker.sock" });
      const have = (await local.listImages()).find((i) => i.RepoTags?.some((t) => t.startsWith("holm-base:")));
      if (!have) throw new Error("no holm-base image here: run scripts/setup.sh");
      image = have.RepoTags!.find((t) => t.startsWith("holm-base:"))!;
      const res = await engine.docker.loadImage((await local.getImage(image).get()) as NodeJS.ReadableStream);
      await new Promise((r, j) => engine.docker.modem.followProgress(res, (e: Error | null) => (e ? j(e) : r(null))));
    }
    const c = await engine.docker.createContainer({ Image: image, Cmd: ["sleep", "600"], Labels: { "holm.test": RUN_LABEL } });
    await c.start();
    for (const [name, d] of clients) {
      const ping: number[] = [];
      const inspect: number[] = [];
      const tunnel: number[] = [];
      for (let i = 0; i < N + 2; i++) {
        let t = now();
        await d.ping();
        if (i >= 2) ping.push(now() - t);
        t = now();
        await d.getContainer(c.id).inspect();
        if (i >= 2) inspect.push(now() - t);
        t = now();
        const exec = await d.getContainer(c.id).exec({ Cmd: ["cat"], AttachStdin: true, AttachStdout: true, Tty: false });
        const stream = (await exec.start({ hijack: true, stdin: true })) as unknown as NodeJS.ReadWriteStream & { destroy(): void };
        // The round trip of a first byte through it, as a tunnel's first use.
        await new Promise<void>((resolve) => {
          stream.once("data", () => resolve());
          stream.write("x\n");
        });
        if (i >= 2) tunnel.push(now() - t);
        stream.destroy();
      }
      summarize(`${name}: ping`, ping);
      summarize(`${name}: container inspect`, inspect);
      summarize(`${name}: exec tunnel to first byte`, tunnel);
    }
    await c.remove({ force: true });
  } finally {
    ours.agent.close();
    streamlocal.agent.close();
    await sshd.stop();
    for (const c of await engine.docker.listContainers({ all: true, filters: { label: [`holm.test=${RUN_LABEL}`] } }).catch(() => [])) {
      await engine.docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
    }
    await engine.stop();
  }
}
