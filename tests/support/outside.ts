import net from "node:net";
import os from "node:os";

// An IPv4 address of this machine that is not loopback (nor a Docker bridge's): a server bound
// there sees its peers as not local, as it would see a client on another machine. Undefined on
// a machine with no such address (tests that need it skip).
export const outsideAddress: string | undefined = Object.entries(os.networkInterfaces())
  .filter(([name]) => !/^(lo|docker|br-|veth)/.test(name))
  .flatMap(([, addrs]) => addrs ?? [])
  .find((a) => a.family === "IPv4" && !a.internal)?.address;

/** A port free on `host` at the time of asking (the kernel's pick). */
export function freePortOn(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, host, () => {
      const p = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(p));
    });
  });
}
