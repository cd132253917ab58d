import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { promisify } from "node:util";
import { log } from "~/utils/log.server";

// The host's rules for the box bridges. Docker isolates containers from each other and NATs them
// out; it does not keep them off the host's own addresses, off link-local services one hop away
// (a cloud's metadata endpoint hands out credentials), or off IPv6. Every rule is checked before
// it is inserted, so a restart or a second server on the same engine adds nothing twice.

const run = promisify(execFile);

/**
 * Link-local (169.254.0.0/16: the metadata endpoint of AWS, GCP, Azure, OpenStack and others at
 * 169.254.169.254) and Alibaba Cloud's metadata address, which sits outside that range.
 */
export const BLOCKED_V4 = ["169.254.0.0/16", "100.100.100.200/32"] as const;

interface Rule {
  bin: "iptables" | "ip6tables";
  chain: string;
  spec: string[];
  why: string;
}

/** What holds for boxes on `bridge`, given which chain sees forwarded IPv4 first. */
export function bridgeRules(bridge: string, forwardChain: string): Rule[] {
  return [
    {
      bin: "iptables",
      chain: "INPUT",
      spec: ["-i", bridge, "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP"],
      // Replies to connections the server opens are still let in.
      why: "keeps boxes away from the host",
    },
    ...BLOCKED_V4.map((net) => ({
      bin: "iptables" as const,
      chain: forwardChain,
      spec: ["-i", bridge, "-d", net, "-j", "DROP"],
      why: `keeps boxes away from ${net}`,
    })),
    // Boxes have no IPv6 (their interfaces have it disabled); these hold even for a process that
    // crafts IPv6 frames itself, and the server never speaks IPv6 to a box.
    { bin: "ip6tables", chain: "INPUT", spec: ["-i", bridge, "-j", "DROP"], why: "keeps boxes away from the host over IPv6" },
    { bin: "ip6tables", chain: "FORWARD", spec: ["-i", bridge, "-j", "DROP"], why: "keeps boxes from routing IPv6 anywhere" },
  ];
}

async function has(bin: string, chain: string, spec: string[] = []): Promise<boolean> {
  try {
    await run(bin, ["-w", spec.length ? "-C" : "-S", chain, ...spec]);
    return true;
  } catch {
    return false;
  }
}

// Two servers on one host (or a test run beside one) could both find a rule missing and both
// insert it: the check and the insert run under one host-wide lock when flock(1) is there.
const LOCK = existsSync("/run/lock") ? "/run/lock/holm-firewall.lock" : "/tmp/holm-firewall.lock";
const CHECK_THEN_INSERT = 'b=$1; shift; "$b" -w -C "$@" 2>/dev/null || "$b" -w -I "$@"';

async function ensure(rule: Rule): Promise<void> {
  if (await has(rule.bin, rule.chain, rule.spec)) return;
  try {
    const args = [rule.bin, rule.chain, ...rule.spec];
    if (existsSync("/usr/bin/flock")) await run("flock", ["-w", "10", LOCK, "sh", "-c", CHECK_THEN_INSERT, "sh", ...args]);
    else await run("sh", ["-c", CHECK_THEN_INSERT, "sh", ...args]);
  } catch (err) {
    log.error({ err }, `${rule.bin} -I ${rule.chain} ${rule.spec.join(" ")} failed`);
    throw new Error(`${rule.bin} refused the rule that ${rule.why} (${rule.spec[1]})`);
  }
}

/** A host without IPv6 has nothing to guard there (and ip6tables would fail). */
function hostHasIpv6(): boolean {
  return existsSync("/proc/sys/net/ipv6");
}

/**
 * Puts the rules for every box bridge in place. Forwarded IPv4 is filtered in DOCKER-USER, the
 * chain Docker jumps to before its own ACCEPT rules and never flushes; FORWARD only when Docker
 * does not manage iptables (then nothing of Docker's comes before our rule either).
 */
export async function guardBridges(bridges: string[]): Promise<void> {
  const forward = (await has("iptables", "DOCKER-USER")) ? "DOCKER-USER" : "FORWARD";
  const v6 = hostHasIpv6();
  for (const bridge of bridges) {
    for (const rule of bridgeRules(bridge, forward)) {
      if (rule.bin === "ip6tables" && !v6) continue;
      await ensure(rule);
    }
  }
}

const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The same rules as one `sh` script, checked and inserted by the host's own iptables: for an
 * engine on another host, which this server reaches only through its Docker API (ADR 0019).
 */
export function guardScript(bridges: string[]): string {
  const lines = [
    "set -e",
    "if iptables -w -S DOCKER-USER >/dev/null 2>&1; then F=DOCKER-USER; else F=FORWARD; fi",
    'ensure() { b=$1; shift; "$b" -w -C "$@" 2>/dev/null || "$b" -w -I "$@"; }',
  ];
  for (const bridge of bridges) {
    for (const rule of bridgeRules(bridge, "@F")) {
      const chain = rule.chain === "@F" ? '"$F"' : shq(rule.chain);
      const line = `ensure ${rule.bin} ${chain} ${rule.spec.map(shq).join(" ")}`;
      lines.push(rule.bin === "ip6tables" ? `if [ -d /proc/sys/net/ipv6 ]; then ${line}; fi` : line);
    }
  }
  return lines.join("\n");
}
