import fs from "node:fs";
import type { Command } from "commander";
import type { Box, CreateBox, Holm } from "~/client/holm";
import { createInterruptibly } from "./create";
import { type Out, UsageError, fail, printJson, printTable, progress, ticker, when } from "./output";

// holm boxes ls|create|get|rm, and the seed's short forms (002): holm new, box, rm, pause,
// resume, stop.

type Ctx = { holm: () => Holm; out: (cmd: Command) => Out };

interface CreateFlags {
  spec?: string;
  width?: string;
  height?: string;
  screens?: string;
  ttl?: string;
  idle?: string;
  memory?: string;
  cpus?: string;
  network?: boolean;
  persistent?: boolean;
  wait?: boolean;
  name?: string;
  label?: string[];
}

const int = (name: string, v: string | undefined) => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw new UsageError(`--${name} must be a whole number, not ${JSON.stringify(v)}`);
  return n;
};

/** The create body: a `--spec` file (a spec, or `{spec, placement}`), with the flags over it. */
export function createBody(f: CreateFlags): CreateBox {
  let body: CreateBox = {};
  if (f.spec) {
    const raw = JSON.parse(fs.readFileSync(f.spec === "-" ? 0 : f.spec, "utf8"));
    body = raw && typeof raw === "object" && ("spec" in raw || "placement" in raw) ? raw : { spec: raw };
  }
  const desktop = { ...body.spec?.desktop };
  const placement = { ...body.placement };
  if (f.width) desktop.width = int("width", f.width);
  if (f.height) desktop.height = int("height", f.height);
  if (f.screens) desktop.screens = int("screens", f.screens);
  if (f.ttl) placement.expires_after_secs = int("ttl", f.ttl)! * 60;
  if (f.idle) placement.idle_timeout_secs = int("idle", f.idle)! * 60;
  if (f.memory) placement.memory = f.memory;
  if (f.cpus) placement.cpus = f.cpus;
  if (f.persistent) placement.persistent = true;
  const spec = { ...body.spec, ...(Object.keys(desktop).length ? { desktop } : {}) };
  if (f.network === false) spec.policy = { ...spec.policy, network: false };
  // holm's name and labels (PATCH /v1/boxes/{id} changes them later).
  const metadata = { ...body.metadata, labels: { ...body.metadata?.labels } };
  if (f.name !== undefined) metadata.name = f.name;
  for (const l of f.label ?? []) {
    const i = l.indexOf("=");
    if (i === 0) throw new UsageError(`--label takes key=value, not ${JSON.stringify(l)}`);
    metadata.labels[i === -1 ? l : l.slice(0, i)] = i === -1 ? "" : l.slice(i + 1);
  }
  const { labels, ...rest } = metadata;
  const meta = { ...rest, ...(Object.keys(labels).length ? { labels } : {}) };
  return {
    ...(Object.keys(spec).length ? { spec } : {}),
    ...(Object.keys(placement).length ? { placement } : {}),
    ...(Object.keys(meta).length ? { metadata: meta } : {}),
  };
}

function printBoxes(boxes: Box[]) {
  printTable(
    ["ID", "STATE", "SCREENS", "SIZE", "CREATED", "EXPIRES", "NAME"],
    boxes.map((b) => [b.id, b.reason ? `${b.state} (${b.reason})` : b.state, b.screens, `${b.width}x${b.height}`, when(b.created_at_ms), when(b.expires_at_ms), b.name ?? ""]),
  );
}

function printBox(b: Box) {
  printTable(
    ["FIELD", "VALUE"],
    [["id", b.id], ["name", b.name], ["labels", Object.keys(b.labels ?? {}).length ? Object.entries(b.labels).map(([k, v]) => (v ? `${k}=${v}` : k)).join(", ") : undefined],
      ["created_by", b.created_by?.name], ["state", b.state], ["reason", b.reason], ["runtime", b.runtime], ["spec_digest", b.spec_digest], ["screens", b.screens],
      ["size", `${b.width}x${b.height}`], ["viewer_url", b.viewer_url], ["created", when(b.created_at_ms)], ["expires", when(b.expires_at_ms)], ["owner", b.owner]]
      .filter((r) => r[1] !== undefined),
  );
}

export function boxCommands(program: Command, ctx: Ctx) {
  const boxes = program.command("boxes").description("list, create, read and remove boxes");

  const ls = async (_: unknown, cmd: Command) => {
    const list = await ctx.holm().boxes.list();
    if (ctx.out(cmd).json) printJson({ boxes: list });
    else if (list.length === 0) progress("no boxes");
    else printBoxes(list);
  };
  boxes.command("ls").alias("list").description("list boxes").action(ls);

  const create = async (f: CreateFlags, cmd: Command) => {
    const body = createBody(f);
    const tick = ticker("creating a box");
    try {
      // A Ctrl-C before the id is printed removes the box being made (cli/create.ts).
      const box = await createInterruptibly(ctx.holm(), body, { wait: f.wait !== false, tick });
      tick.done(`${box.id} ${box.state}`);
      // Only the id on stdout, so BOX=$(holm boxes create) works.
      if (ctx.out(cmd).json) printJson(box);
      else process.stdout.write(`${box.id}\n`);
    } catch (e) {
      tick.stop();
      throw e;
    }
  };
  const withCreateFlags = (c: Command) =>
    c
      .option("--spec <file>", "a spec (or {spec, placement}) as JSON; - reads stdin")
      .option("--width <px>", "screen width")
      .option("--height <px>", "screen height")
      .option("--screens <n>", "number of screens (1 to 8)")
      .option("--ttl <minutes>", "remove the box after this long")
      .option("--idle <minutes>", "remove the box after this long unused")
      .option("--memory <size>", 'memory limit, e.g. "2g"')
      .option("--cpus <n>", 'CPU limit, e.g. "2"')
      .option("--no-network", "no network access in the box")
      .option("--persistent", "keep the files when the box stops")
      .option("--no-wait", "answer at once, even while the box is starting")
      .option("--name <name>", "the box's name (holm's metadata)")
      .option("--label <key=value>", "a label (holm's metadata); repeat for more", (v: string, all: string[] = []) => [...all, v])
      .action(create);
  withCreateFlags(boxes.command("create").description("create a box, wait until it runs, print its id"));
  withCreateFlags(program.command("new").description("the same as boxes create"));

  const get = async (id: string, _: unknown, cmd: Command) => {
    const box = await ctx.holm().boxes.get(id);
    if (ctx.out(cmd).json) printJson(box);
    else printBox(box);
  };
  boxes.command("get <box>").description("show one box").action(get);
  program.command("box <box>").description("the same as boxes get").action(get);

  // One box that cannot be removed does not keep the others: each is tried, each removal is
  // printed as it happens (so a failure later cannot hide it), each failure goes to stderr, and
  // the exit code is 1 if any failed.
  const rm = async (ids: string[], _: unknown, cmd: Command) => {
    const json = ctx.out(cmd).json;
    const removed: Box[] = [];
    let failed = 0;
    for (const id of ids) {
      try {
        const b = await ctx.holm().boxes.remove(id);
        removed.push(b);
        if (!json) process.stdout.write(`removed ${b.id}\n`);
      } catch (e) {
        failed = fail(e);
      }
    }
    if (json) printJson({ boxes: removed });
    if (failed) process.exitCode = failed;
  };
  boxes.command("rm <box...>").alias("remove").description("remove boxes (their traces stay)").action(rm);
  program.command("rm <box...>").description("the same as boxes rm").action(rm);

  for (const verb of ["pause", "resume", "stop"] as const) {
    const run = async (id: string, _: unknown, cmd: Command) => {
      const box = await ctx.holm().boxes[verb](id);
      if (ctx.out(cmd).json) printJson(box);
      else process.stdout.write(`${box.id} ${box.state}\n`);
    };
    const what = { pause: "pause a box", resume: "resume a paused or stopped box", stop: "stop a box and keep its files" }[verb];
    boxes.command(`${verb} <box>`).description(what).action(run);
    program.command(`${verb} <box>`).description(what).action(run);
  }
}
