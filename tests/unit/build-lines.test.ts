import { describe, expect, it } from "vitest";
import { lineSplitter } from "~/runtime/image-builder.server";

// The image build's output as the engine streams it (legacy builder, one event per write, stderr
// in red): the sequences below are copied from real builds of a missing package on this engine.

function split(chunks: string[]): string[] {
  const lines: string[] = [];
  const s = lineSplitter((l) => lines.push(l));
  for (const c of chunks) s.push(c);
  s.flush();
  return lines;
}

const RED = "\x1b[91m";
const OFF = "\x1b[0m";

describe("build output lines", () => {
  it("joins apt's error written in three pieces", () => {
    expect(split(["Building dependency tree...", "\n", `${RED}E${OFF}`, `${RED}: ${OFF}`, `${RED}Unable to locate package nosuch\n${OFF}`, "Removing intermediate container 8f86c529424e\n"])).toEqual([
      "Building dependency tree...",
      "E: Unable to locate package nosuch",
      "Removing intermediate container 8f86c529424e",
    ]);
  });

  it("keeps stderr's line apart when it lands before stdout's newline", () => {
    expect(split(["Building dependency tree...", `${RED}E: Unable to locate package nosuch\n${OFF}`, "\n", "Removing intermediate container 0540022de530\n"])).toEqual([
      "Building dependency tree...",
      "E: Unable to locate package nosuch",
      "Removing intermediate container 0540022de530",
    ]);
  });

  it("drops carriage-return progress and escapes, and keeps a last line without a newline", () => {
    expect(split(["Get:1 a\r", "Get:2 b\r\n", "\x1b[1Adone", " for now"])).toEqual(["Get:1 a", "Get:2 b", "done for now"]);
  });
});
