import ssh2 from "ssh2";

/**
 * An ed25519 key pair in OpenSSH's formats, from ssh2's generator. That generator drops a public
 * key's leading zero byte (about 1 key in 200 here: "AAAAHy…", a length of 31), which ssh2's own
 * parser then refuses as malformed, as the server does; so a pair is made until both halves parse.
 */
export function sshKeyPair(opts?: Parameters<typeof ssh2.utils.generateKeyPairSync>[1]): { private: string; public: string } {
  for (let i = 0; i < 100; i++) {
    const pair = ssh2.utils.generateKeyPairSync("ed25519", opts as never);
    const pub = ssh2.utils.parseKey(pair.public);
    const priv = ssh2.utils.parseKey(pair.private, (opts as { passphrase?: string } | undefined)?.passphrase);
    if (!(pub instanceof Error) && !(priv instanceof Error)) return pair;
  }
  throw new Error("ssh2 made no key pair that parses in 100 tries");
}
