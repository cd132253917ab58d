// The layer rules of docs/decisions/0009-layers.md, checked by `npm run check:layers`
// (dependency-cruiser, through scripts/check-layers.mjs; part of `npm run validate`).
// Type-only imports count too, except from components: a type still ties two layers together.

/** [name, from, forbidden to, why] */
const RULES = [
  ["utils-are-a-leaf", "^app/utils/", "^(app/(models|edge|routes|runtime|components)/|server/)",
    "app/utils/ (env, store, errors, secrets) imports no model, edge helper, route, runtime or socket module."],
  ["protocol-is-a-leaf", "^app/protocol/", "^(app/(?!protocol/)|server/|images/|db/)",
    "app/protocol/ is the wire shared by server, browser and box: only npm packages and itself."],
  ["routes-stay-on-the-edge", "^app/routes/", "^(server/|app/runtime/)",
    "Routes call models through the edge helpers; never a socket module or a runtime."],
  ["models-know-no-http-or-ui", "^app/models/", "^(app/(routes|edge|components)/|server/)",
    "Models return data; routes and the edge choose HTTP answers, components draw it."],
  ["runtime-knows-no-domain", "^app/runtime/", "^(app/(models|routes|edge|components)/|server/)",
    "The runtime runs containers; it knows no box record, route or socket."],
  ["edge-uses-no-socket-module", "^app/edge/", "^(server/|app/routes/|app/runtime/)",
    "The request edge (app/edge/) serves routes and sockets alike; it imports neither."],
  ["mcp-calls-v1-through-the-client", "^app/mcp/", "^(server/|app/(routes|runtime|components)/)",
    "app/mcp/ (the MCP tools, docs/decisions/0013) calls /v1 through app/client/; it takes schemas from protocol, edge and models, and no route, socket module or runtime."],
  ["the-agent-shares-only-the-protocol", "^images/", "^(app/(?!protocol/)|server/|db/)",
    "The in-box agent is bundled alone for Node 18: from app/ it takes only app/protocol/."],
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-cycle",
      comment: "No import cycle in app/, server/ or the agent: a cycle makes load order matter.",
      severity: "error",
      from: { path: "^(app|server|images)/" },
      to: { circular: true },
    },
    {
      name: "components-are-client-safe",
      comment: "Components run in the browser: no server-only module, except for its types.",
      severity: "error",
      from: { path: "^app/components/" },
      to: { path: "(\\.server\\.tsx?$|^server/|^app/runtime/)", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "client-runs-anywhere",
      comment: "app/client/ (the /v1 client, for the CLI, MCP tools and tests) runs outside the server: protocol, itself, and types of the models' schemas only.",
      severity: "error",
      from: { path: "^app/client/" },
      to: { path: "^(app/(?!(protocol|client)/)|server/|db/|images/)", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "cli-is-a-client",
      comment: "The holm CLI (cli/) is bundled alone and talks to a server over /v1: the client, the protocol, the trace's words; types of the rest only.",
      severity: "error",
      from: { path: "^cli/(?!local/)" },
      to: { path: "^(app/(?!(protocol|client)/|components/trace-describe\\.tsx$)|server/|db/|images/)", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "cli-local-runs-beside-the-server",
      comment: "holm backup/restore/doctor (cli/local/, docs/decisions/0023) read the server's settings, store and engine on its machine: utils, runtime, db, protocol and the pure spec module; no edge, route, socket module or other model.",
      severity: "error",
      from: { path: "^cli/local/" },
      to: { path: "^(app/(edge|routes|components|mcp|client)/|server/|images/|app/models/(?!spec\\.server\\.ts$))" },
    },
    ...RULES.map(([name, from, to, comment]) => ({ name, comment, severity: "error", from: { path: from }, to: { path: to } })),
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(build|\\.react-router|node_modules)" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".tsx", ".js", ".mjs"] },
  },
};
