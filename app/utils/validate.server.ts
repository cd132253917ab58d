import type { z } from "zod";
import { badRequest } from "./api-error.server";
import { protoKeyAt } from "./proto-key";

// A zod check whose failure is a 400 naming the first bad field, for routes and models alike.
// An unknown key is named before anything else: a misspelled key (`steps` for `actions`) also
// leaves the right one missing, and "actions: expected array, received undefined" would send the
// caller looking for a key they believe they sent (000: "a misspelled key gives an error").

export function validate<S extends z.ZodType>(schema: S, raw: unknown, where: string): z.output<S> {
  const proto = protoKeyAt(raw);
  if (proto !== undefined) throw badRequest(`${proto}: "__proto__" cannot be a key in the ${where}`, proto);
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const issues = result.error.issues;
  const issue = issues.find((i) => i.code === "unrecognized_keys") ?? issues[0];
  throw badRequest(describeIssue(issue, where, issues, raw), issue?.path.length ? issue.path.map(String).join(".") : undefined);
}

type Issue = z.core.$ZodIssue;

/** The value at `path` in `raw`, and whether its last key is absent from the object holding it. */
function absent(raw: unknown, path: readonly PropertyKey[]): boolean {
  let at: unknown = raw;
  for (const k of path.slice(0, -1)) {
    if (at === null || typeof at !== "object") return false;
    at = (at as Record<PropertyKey, unknown>)[k];
  }
  return at !== null && typeof at === "object" && !Array.isArray(at) && !Object.hasOwn(at, path[path.length - 1]!);
}

/** Keys the schema needs beside the unknown ones, in the same object, that the caller did not send. */
function missingBeside(unknown: Issue, issues: readonly Issue[], raw: unknown): string[] {
  const depth = unknown.path.length;
  return issues
    .filter((i) => i !== unknown && i.path.length === depth + 1 && unknown.path.every((k, n) => i.path[n] === k) && absent(raw, i.path))
    .map((i) => String(i.path[depth]));
}

function describeIssue(issue: Issue | undefined, where: string, issues: readonly Issue[], raw: unknown): string {
  if (!issue) return `the ${where} is not valid`;
  const at = issue.path.length ? issue.path.map(String).join(".") : where;
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((k) => `"${k}"`).join(", ");
    const missing = missingBeside(issue, issues, raw).map((k) => `"${k}"`);
    // One unknown key where one needed key is missing: most likely that one, named otherwise.
    const hint =
      missing.length === 0 ? "" : issue.keys.length === 1 && missing.length === 1 ? ` (did you mean ${missing[0]}?)` : ` (missing: ${missing.join(", ")})`;
    return `unknown key ${keys} in ${at === where ? `the ${where}` : at}${hint}`;
  }
  // A record key that failed its own schema: say what that schema says, not "Invalid key in record".
  if (issue.code === "invalid_key" && issue.issues[0]) return `${at}: ${issue.issues[0].message}`;
  return `${at}: ${issue.message}`;
}
