import { ApiError } from "~/utils/api-error.server";

// STUB (issue 12): a workspace's named secrets, encrypted at rest, write-only through /v1 and
// the console. Only the server reads a value, to type it into a box (`secret_ref`).

/** The value of a secret of `owner` (a workspace id; null: the server token's own). */
export async function secretValue(_owner: string | null, name: string): Promise<string> {
  throw new ApiError("bad_request", `no secret named "${name}"`);
}
