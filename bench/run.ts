import { benchAuth } from "./auth";
import { benchBoxList } from "./box-list";
import { benchBoxRead } from "./box-read";
import { benchBoxStart } from "./box-start";
import { benchCdp } from "./cdp";
import { benchCluster } from "./cluster";
import { benchDensity } from "./density";
import { benchDrive } from "./drive";
import { benchObservability } from "./observability";
import { benchPages } from "./pages";
import { benchPool } from "./pool";
import { benchRecording } from "./recording";
import { benchWidgets } from "./widgets";
import { benchWayland } from "./wayland";
import { benchRemote } from "./remote";
import { benchScrub } from "./scrub";
import { benchSshTransport } from "./ssh-transport";
import { benchTrace } from "./trace";
import { benchViewer } from "./viewer";
import { benchViewerAttach } from "./viewer-attach";
import { benchViewersLoad } from "./viewers-load";
import { dropTestServerDatabases } from "../tests/support/server";

// `npm run bench [name…]`: runs the named benches (all by default). Needs `npm run build` and
// the box image (scripts/setup.sh does both).

const benches: Record<string, () => Promise<void>> = {
  "box-start": benchBoxStart,
  "box-read": benchBoxRead,
  "box-list": benchBoxList,
  drive: benchDrive,
  observability: benchObservability,
  pages: benchPages,
  pool: benchPool,
  cdp: benchCdp,
  auth: benchAuth,
  trace: benchTrace,
  scrub: benchScrub,
  viewer: benchViewer,
  "viewer-attach": benchViewerAttach,
  "viewers-load": benchViewersLoad,
  density: benchDensity,
  remote: benchRemote,
  recording: benchRecording,
  widgets: benchWidgets,
  wayland: benchWayland,
  cluster: benchCluster,
  "ssh-transport": benchSshTransport,
};

const names = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(benches);
for (const name of names) {
  const run = benches[name];
  if (!run) {
    console.error(`no bench ${name}; have ${Object.keys(benches).join(", ")}`);
    process.exit(2);
  }
  console.log(`== ${name}`);
  try {
    await run();
  } finally {
    // The PostgreSQL databases of the bench's servers (HOLM_TEST_STORE=postgres, or a bench
    // that asks for postgres): none is left behind.
    await dropTestServerDatabases();
  }
}
