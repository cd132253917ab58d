// Reads every test server's log of a run for the secrets the run's tests registered
// (tests/support/log-secrets.ts); exits 1, naming file, line and which secret, when one is found.
//   node --import tsx scripts/check-log-secrets.ts DIR      (scripts/test.sh, after every suite)
import fs from "node:fs";
import { describeFindings, findSecrets, readSecrets } from "../tests/support/log-secrets";

const dir = process.argv[2];
if (!dir || !fs.existsSync(dir)) {
  console.error(`check-log-secrets: no directory ${dir ?? "(none given)"}`);
  process.exit(2);
}
const logs = fs.readdirSync(dir).filter((f) => f.endsWith(".log")).length;
const secrets = readSecrets(dir).length;
const found = findSecrets(dir);
if (found.length) {
  console.error(`${found.length} secret(s) in the servers' logs:\n${describeFindings(found)}`);
  process.exit(1);
}
console.log(`no secret in the servers' logs (${secrets} secret(s) looked for in ${logs} log(s))`);
