import { createCipheriv, createDecipheriv } from "node:crypto";

// VNC authentication (RFC 6143 §7.2.2) and x11vnc's password file, in Node's OpenSSL 3: it has
// no `des-ecb`, but `des-ede-ecb` with the 8-byte key given twice is single DES. VNC takes the
// password (up to 8 bytes, zero-padded) as the DES key with the bits of every byte reversed.

/** libvncserver's fixed key for password files (`vncEncryptAndStorePasswd`), in VNC's bit order. */
const PASSWD_FILE_KEY = Buffer.from([23, 82, 107, 6, 35, 78, 88, 7]);

function reverseBits(b: number): number {
  let r = 0;
  for (let i = 0; i < 8; i++) r |= ((b >> i) & 1) << (7 - i);
  return r;
}

/** A VNC key: the first 8 bytes of `password`, zero-padded, each byte's bits reversed. */
function vncKey(password: Uint8Array): Buffer {
  const k = Buffer.alloc(8);
  for (let i = 0; i < 8 && i < password.length; i++) k[i] = reverseBits(password[i]!);
  return k;
}

/** DES-ECB of whole 8-byte blocks with an 8-byte key (already in DES bit order). */
function desEcb(key: Buffer, data: Buffer): Buffer {
  const c = createCipheriv("des-ede-ecb", Buffer.concat([key, key]), null);
  c.setAutoPadding(false);
  return Buffer.concat([c.update(data), c.final()]);
}

/** The 16-byte answer to a server's 16-byte VNC authentication challenge. */
export function vncChallengeResponse(password: string, challenge: Buffer): Buffer {
  if (challenge.length !== 16) throw new Error(`a VNC challenge is 16 bytes, not ${challenge.length}`);
  return desEcb(vncKey(Buffer.from(password, "latin1")), challenge);
}

/** The 8 bytes of an x11vnc `-rfbauth` file (what `x11vnc -storepasswd` writes) for `password`. */
export function vncPasswdFile(password: string): Buffer {
  const pw = Buffer.alloc(8);
  Buffer.from(password, "latin1").copy(pw, 0, 0, 8);
  return desEcb(vncKey(PASSWD_FILE_KEY), pw);
}

/** The password in an x11vnc `-rfbauth` file (the inverse of vncPasswdFile): the box's relay logs in with it. */
export function passwordOfVncPasswdFile(file: Buffer): string {
  if (file.length < 8) throw new Error("a VNC password file holds 8 bytes");
  const d = createDecipheriv("des-ede-ecb", Buffer.concat([vncKey(PASSWD_FILE_KEY), vncKey(PASSWD_FILE_KEY)]), null);
  d.setAutoPadding(false);
  const pw = Buffer.concat([d.update(file.subarray(0, 8)), d.final()]);
  const end = pw.indexOf(0);
  return pw.subarray(0, end < 0 ? 8 : end).toString("latin1");
}

/**
 * 8 printable ASCII characters (`!`–`~`, no zero byte, which would end a C string) from the bytes
 * of a derived secret: VNC uses no more of a password, and drops the top bit of each byte, so
 * this is about 52 bits, the most VNC authentication can carry.
 */
export function vncPasswordFrom(secret: Buffer): string {
  let out = "";
  for (let i = 0; i < 8; i++) out += String.fromCharCode(0x21 + (secret[i]! % 94));
  return out;
}
