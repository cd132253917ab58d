// Preloaded into a bench's server (HOLM_PROF_NODE_OPTIONS="--require ./bench/profiler.cjs", see
// tests/support/server.ts): samples its CPU from start to exit and writes
// server-<pid>.cpuprofile in the server's tmpdir (open it in Chrome DevTools). NODE_OPTIONS refuses --cpu-prof.
const inspector = require("node:inspector");
const fs = require("node:fs");
const path = require("node:path");
const dir = require("node:os").tmpdir();
const session = new inspector.Session();
session.connect();
session.post("Profiler.enable");
session.post("Profiler.setSamplingInterval", { interval: 100 });
session.post("Profiler.start");
// A session on the main thread answers synchronously, so this still runs inside process.exit().
process.on("exit", () => {
  session.post("Profiler.stop", (err, res) => {
    if (!err) fs.writeFileSync(path.join(dir, `server-${process.pid}.cpuprofile`), JSON.stringify(res.profile));
  });
});
