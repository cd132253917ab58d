// Builds the base and one desktop image with progress on stdout; used by scripts/setup.sh.
//
//   node --import tsx scripts/build-images.ts [--features a,b] [--packages x,y] [--base-only]
//
// Without --features it builds the default desktop, the one a spec that lists no features gets.

import { parseArgs } from "node:util";
import Docker from "dockerode";
import { ensureBaseImage, ensureX11Image } from "../app/runtime/image-builder.server";
import { FEATURES, type Feature } from "../app/runtime/runtime";

// Mirrors the default feature set of a box spec (see "What is inside a box").
const DEFAULT_FEATURES: Feature[] = ["wide_fonts", "video", "dock", "accessibility"];

function list(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

function isFeature(s: string): s is Feature {
  return (FEATURES as readonly string[]).includes(s);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      features: { type: "string" },
      packages: { type: "string" },
      "base-only": { type: "boolean", default: false },
    },
  });
  const features = values.features === undefined ? DEFAULT_FEATURES : list(values.features);
  const unknown = features.filter((f) => !isFeature(f));
  if (unknown.length > 0) throw new Error(`unknown features: ${unknown.join(", ")} (known: ${FEATURES.join(", ")})`);

  const docker = new Docker();
  const started = Date.now();
  const log = (line: string): void => {
    console.log(`  [${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${line}`);
  };

  const base = await ensureBaseImage(docker, log);
  console.log(`${base.image}: ${base.built ? "built" : "up to date"}`);
  if (values["base-only"]) return;

  const x11 = await ensureX11Image(
    docker,
    { features: features.filter(isFeature), packages: list(values.packages) },
    log,
  );
  const info = await docker.getImage(x11.image).inspect();
  console.log(
    `${x11.image}: ${x11.built ? "built" : "up to date"} (${(info.Size / 1e6).toFixed(0)} MB, ` +
      `${((Date.now() - started) / 1000).toFixed(1)} s)`,
  );
}

main().catch((err: unknown) => {
  console.error(`build-images: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
