import { z } from "zod";
import { ErrorBodySchema } from "~/protocol/api-box";
import { StepSchema } from "~/protocol/actions";
import { ERROR_STATUS, type ErrorCode } from "~/protocol/errors";
import { ElementOpSchema } from "~/protocol/page-actions";
import { PlacementSchema, SpecSchema } from "~/models/spec.server";
import { OPERATIONS, type NotBuiltEntry, type Operation, notBuiltOperations } from "./api-operations.server";

// GET /v1/openapi.json: an OpenAPI 3.1 document made from the operations registry
// (api-operations.server.ts) with zod 4's own JSON Schema generator (z.toJSONSchema, draft
// 2020-12, which is OpenAPI 3.1's dialect). Bodies are components; a component used inside
// another (a Step inside a batch, a Placement inside a fork) becomes a $ref. Schemas describe
// what a caller sends (`io: "input"`): defaults are optional, coerced query numbers are numbers.

type Json = Record<string, unknown>;

const REF = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const ERROR_REF = { "application/json": { schema: REF("Error") } };

/** Schemas named once, so each is a component and every use of it a $ref. */
const SHARED: [z.ZodType, string][] = [
  [ErrorBodySchema, "Error"],
  [StepSchema, "Step"],
  [ElementOpSchema, "ElementOp"],
  [SpecSchema, "Spec"],
  [PlacementSchema, "Placement"],
];

const bodyName = (op: Operation) => `${op.id[0]!.toUpperCase()}${op.id.slice(1)}Body`;

/** `{id}` → a parameter whose schema says what the route accepts there. */
function pathParam(name: string): Json {
  // A route's splat (`…/json/*`): the rest of the path, slashes and all.
  if (name === "rest") return { name, in: "path", required: true, description: "The rest of the path; it may hold `/`.", schema: { type: "string" } };
  const schema: Json =
    name === "screen" ? { type: "integer", minimum: 0, maximum: 7 } : { type: "string", minLength: 1, ...(name === "id" ? { pattern: "^box_" } : {}) };
  return { name, in: "path", required: true, schema };
}

/** A strict object query schema as one parameter per key (`additionalProperties: false` is the route's 400). */
function queryParams(schema: z.ZodType): Json[] {
  const js = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(js.properties ?? {}).map(([name, s]) => ({
    name,
    in: "query",
    required: (js.required ?? []).includes(name),
    schema: s,
  }));
}

/** The error statuses an operation can answer, each with the codes behind it. */
export function errorCodes(op: Operation): ErrorCode[] {
  const codes = new Set<ErrorCode>(op.errors ?? []);
  if (op.notBuilt) codes.add("unsupported");
  if (!op.open) {
    codes.add("unauthorized");
    codes.add("forbidden");
  }
  if (op.body || op.query || op.path.includes("{") || op.headers) codes.add("bad_request");
  if (op.body) codes.add("too_large");
  if (op.path.startsWith("/v1/boxes/{id}")) {
    for (const c of ["not_found", "gone", "denied"] as const) codes.add(c);
    // Past the record: the box's runtime and agent answer, or not.
    if (op.path !== "/v1/boxes/{id}" || op.method !== "GET") for (const c of ["transport", "unavailable", "timeout"] as const) codes.add(c);
  } else if (op.path.includes("{")) codes.add("not_found");
  if (op.path.startsWith("/v1/jobs/")) codes.add("denied");
  codes.add("internal");
  return [...codes];
}

function responses(op: Operation): Json {
  const ok: Json = op.binary
    ? { description: op.binary.about, content: { [op.binary.type]: { schema: { type: "string", contentMediaType: op.binary.type } } } }
    : { description: op.summary, content: { "application/json": { schema: op.answer ?? { type: "object" } } } };
  const out: Json = { "200": ok };
  if (op.accepted) {
    const description = typeof op.accepted === "string" ? op.accepted : "Queued: the box is `starting`; read it until it is `ready` or `failed`.";
    out["202"] = { description, content: ok.content };
  }
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodes(op)) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[String(status)] = { description: codes.map((c) => `\`${c}\``).join(", "), content: ERROR_REF };
  }
  return out;
}

function operationObject(op: Operation, nameOf: (s: z.ZodType) => string): Json {
  const params = [...(op.path.match(/\{(\w+)\}/g) ?? []).map((p) => pathParam(p.slice(1, -1))), ...(op.query ? queryParams(op.query) : [])];
  for (const [name, description] of Object.entries(op.headers ?? {})) params.push({ name, in: "header", required: true, description, schema: { type: "string" } });
  if (op.idempotent) {
    params.push({ name: "idempotency-key", in: "header", required: false, description: "The same key with the same body answers the first result.", schema: { type: "string" } });
  }
  const out: Json = { operationId: op.id, summary: op.summary, tags: [op.tag] };
  if (op.description) out.description = op.description;
  if (params.length) out.parameters = params;
  if (op.body) {
    // An empty body reads as `{}`; unknown keys are refused (000: "a misspelled key gives an error").
    out.requestBody = { required: false, content: { "application/json": { schema: REF(nameOf(op.body)), ...(op.example ? { example: op.example } : {}) } } };
  }
  out.responses = responses(op);
  if (op.open) out.security = [];
  if (op.notBuilt) out["x-holm-not-built"] = true;
  return out;
}

/** The component schemas: every body under `<OperationId>Body`, and the shared ones by name. */
function componentSchemas(ops: readonly Operation[]) {
  const registry = z.registry<{ id: string }>();
  for (const [schema, id] of SHARED) registry.add(schema, { id });
  for (const op of ops) if (op.body && !registry.has(op.body)) registry.add(op.body, { id: bodyName(op) });
  const { schemas } = z.toJSONSchema(registry, { io: "input", unrepresentable: "any", uri: (id) => `#/components/schemas/${id}` }) as {
    schemas: Record<string, Json>;
  };
  for (const s of Object.values(schemas)) {
    delete s.$schema;
    delete s.$id;
  }
  return { schemas, nameOf: (s: z.ZodType) => registry.get(s)!.id };
}

/** The document for these operations (the registry's, and the not-built routes'). */
export function openApiDocument(notBuilt: readonly NotBuiltEntry[] = []): Json {
  const ops = [...OPERATIONS, ...notBuiltOperations(notBuilt)];
  const { schemas, nameOf } = componentSchemas(ops);
  const paths: Record<string, Json> = {};
  for (const op of ops) (paths[op.path] ??= {})[op.method.toLowerCase()] = operationObject(op, nameOf);
  return {
    openapi: "3.1.0",
    info: {
      title: "holm /v1",
      version: "1",
      description:
        "Boxes (isolated Linux desktops) for AI agents. Every error is {code, message, retryable}, each code with one status. " +
        "Send `Authorization: Bearer <holm_sk_ key, workspace or server token>`; in open mode (no server token, before the first sign-up) " +
        "loopback callers need none.",
    },
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    servers: [{ url: "/" }],
    security: [{ bearer: [] }],
    paths,
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } }, schemas },
    "x-holm-not-built": notBuilt.map((r) => ({ path: seedPath(r.path), methods: r.methods })),
  };
}

/** The seed's spelling: `{id}` for `:id`, `…` for a splat. */
const seedPath = (p: string) => `/${p}`.replace(/:(\w+)/g, "{$1}").replace(/\*$/, "…");
