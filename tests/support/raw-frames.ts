// Hand-made Ethernet frames for the attacks a process in a box would try with a packet socket
// (socat's INTERFACE address): an ARP reply that claims another box's address, and an IPv6 UDP
// datagram to the host's link-local address on the bridge.

function mac(text: string): Buffer {
  const bytes = text.split(":").map((h) => Number.parseInt(h, 16));
  if (bytes.length !== 6 || bytes.some((b) => !(b >= 0 && b <= 255))) throw new Error(`not a MAC: ${text}`);
  return Buffer.from(bytes);
}

function ipv4(text: string): Buffer {
  const bytes = text.split(".").map(Number);
  if (bytes.length !== 4 || bytes.some((b) => !(b >= 0 && b <= 255))) throw new Error(`not an IPv4 address: ${text}`);
  return Buffer.from(bytes);
}

/** A full 16-byte IPv6 address, `::` shorthand and a `%zone` suffix allowed. */
export function ipv6(text: string): Buffer {
  const [addr] = text.split("%");
  const [head, tail] = addr!.includes("::") ? addr!.split("::") : [addr!, undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  if (groups.length !== 8) throw new Error(`not an IPv6 address: ${text}`);
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(Number.parseInt(g, 16), i * 2));
  return out;
}

/**
 * "`claimedIp` is at `attackerMac`", sent to `victimMac` (who asked nothing): the classic ARP
 * spoof. A host that believes it sends the claimed address's traffic to the attacker.
 */
export function arpReply(opts: { attackerMac: string; claimedIp: string; victimMac: string; victimIp: string }): Buffer {
  return Buffer.concat([
    mac(opts.victimMac),
    mac(opts.attackerMac),
    Buffer.from([0x08, 0x06]), // ARP
    Buffer.from([0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02]), // Ethernet/IPv4, reply
    mac(opts.attackerMac),
    ipv4(opts.claimedIp),
    mac(opts.victimMac),
    ipv4(opts.victimIp),
  ]);
}

function onesComplementSum(data: Buffer): number {
  let sum = 0;
  for (let i = 0; i < data.length; i += 2) sum += (data[i]! << 8) | (data[i + 1] ?? 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return sum;
}

/** An Ethernet frame carrying one IPv6 UDP datagram (checksum included: IPv6 requires it). */
export function ipv6Udp(opts: {
  srcMac: string;
  dstMac: string;
  srcIp: string;
  dstIp: string;
  srcPort: number;
  dstPort: number;
  payload: Buffer;
}): Buffer {
  const src = ipv6(opts.srcIp);
  const dst = ipv6(opts.dstIp);
  const udpLen = 8 + opts.payload.length;
  const udp = Buffer.alloc(udpLen);
  udp.writeUInt16BE(opts.srcPort, 0);
  udp.writeUInt16BE(opts.dstPort, 2);
  udp.writeUInt16BE(udpLen, 4);
  opts.payload.copy(udp, 8);
  const pseudo = Buffer.alloc(40);
  src.copy(pseudo, 0);
  dst.copy(pseudo, 16);
  pseudo.writeUInt32BE(udpLen, 32);
  pseudo[39] = 17;
  const sum = ~onesComplementSum(Buffer.concat([pseudo, udp])) & 0xffff;
  udp.writeUInt16BE(sum === 0 ? 0xffff : sum, 6);
  const ip = Buffer.alloc(40);
  ip.writeUInt32BE(0x60000000, 0); // version 6, no class or flow label
  ip.writeUInt16BE(udpLen, 4);
  ip[6] = 17; // UDP
  ip[7] = 255;
  src.copy(ip, 8);
  dst.copy(ip, 24);
  return Buffer.concat([mac(opts.dstMac), mac(opts.srcMac), Buffer.from([0x86, 0xdd]), ip, udp]);
}

/**
 * The argv that makes a process in the box put `frame` on its eth0 through a packet socket.
 * Only tools every box has: bash, coreutils' base64 and socat.
 */
/**
 * Sends `frame` as it is on the box's eth0 through a packet socket (perl is in every Debian image;
 * socat is not in the box image). Without CAP_NET_RAW the socket call fails: "Operation not permitted".
 */
export function sendFrameArgv(frame: Buffer): string[] {
  const script = [
    "use Socket;",
    `my $frame = pack("H*", "${frame.toString("hex")}");`,
    'socket(my $s, 17, SOCK_RAW, 0) or die "socket: $!\n";',
    'open(my $f, "<", "/sys/class/net/eth0/ifindex") or die "ifindex: $!\n"; my $i = <$f>; chomp $i;',
    // struct sockaddr_ll: family, protocol, ifindex, hatype, pkttype, halen, address.
    'my $to = pack("S n i S C C a8", 17, 0, $i, 0, 0, 6, substr($frame, 0, 6));',
    'send($s, $frame, 0, $to) or die "send: $!\n";',
  ].join(" ");
  return ["perl", "-e", script];
}
