import type { z } from "zod";
import { badRequest } from "./api-error.server";
import { protoKeyAt } from "./proto-key";

// A zod check whose failure is a 400 naming the first bad field, for routes and models alike.

export function validate<S extends z.ZodType>(schema: S, raw: unknown, where: string): z.output<S> {
  const proto = protoKeyAt(raw);
  if (proto !== undefined) throw badRequest(`${proto}: "__proto__" cannot be a key in the ${where}`, proto);
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw badRequest(describeIssue(issue, where), issue?.path.length ? issue.path.map(String).join(".") : undefined);
}

function describeIssue(issue: z.core.$ZodIssue | undefined, where: string): string {
  if (!issue) return `the ${where} is not valid`;
  const at = issue.path.length ? issue.path.map(String).join(".") : where;
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((k) => `"${k}"`).join(", ");
    return `unknown key ${keys} in ${at === where ? `the ${where}` : at}`;
  }
  // A record key that failed its own schema: say what that schema says, not "Invalid key in record".
  if (issue.code === "invalid_key" && issue.issues[0]) return `${at}: ${issue.issues[0].message}`;
  return `${at}: ${issue.message}`;
}
