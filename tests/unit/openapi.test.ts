import path from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { OPERATIONS } from "~/edge/api-operations.server";
import { BoxNameSchema } from "~/protocol/api-box";
import { openApiDocument } from "~/edge/openapi.server";
import { NOT_BUILT } from "~/routes/v1/not-built-list";
import { v1Routes } from "../../app/routes";

// The OpenAPI document against the routes it describes, with no server: every /v1 route and
// method of app/routes.ts has exactly one operation and no operation names a path or method no
// route serves; every body the document gives refuses an unknown key, as the route's zod schema
// does (checked both on the zod schema and on the generated JSON Schema, with Ajv); every $ref
// resolves. The live routes' refusals are tests/integration/openapi.test.ts.

const ROOT = path.resolve(import.meta.dirname, "../..");
const doc = openApiDocument(NOT_BUILT) as any;
const UNKNOWN = "__holm_unknown__";
// A splat (`…/json/*`) is documented as a `{rest}` parameter.
const toPath = (p: string) => `/${p}`.replace(/:(\w+)/g, "{$1}").replace(/\/\*$/, "/{rest}");

async function served(): Promise<Set<string>> {
  const out = new Set<string>();
  for (const r of v1Routes) {
    if (r.path === "v1/*") continue;
    const mod = await import(path.join(ROOT, "app", r.file));
    const methods = (mod.loader?.methods ?? []) as string[];
    expect(methods.length, `${r.path} declares no methods`).toBeGreaterThan(0);
    for (const m of methods) out.add(`${m} ${toPath(r.path!)}`);
  }
  return out;
}

function documented(built: boolean): Set<string> {
  const out = new Set<string>();
  for (const [p, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [m, op] of Object.entries(item)) if (!op["x-holm-not-built"] === built) out.add(`${m.toUpperCase()} ${p}`);
  }
  return out;
}

describe("GET /v1/openapi.json: the document and the routes", () => {
  it("documents every route and method the router serves, and nothing else", async () => {
    const routes = await served();
    const docs = documented(true);
    expect([...routes].filter((r) => !docs.has(r)), "routes with no operation").toEqual([]);
    expect([...docs].filter((d) => !routes.has(d)), "operations no route serves").toEqual([]);
    expect(routes.size).toBeGreaterThan(60);
  });

  it("documents the not-built routes as they are listed (a splat is listed under x-holm-not-built only)", () => {
    const want = new Set(NOT_BUILT.filter((r) => !r.path.endsWith("*")).flatMap((r) => r.methods.map((m) => `${m} ${toPath(r.path)}`)));
    expect(documented(false)).toEqual(want);
    expect(doc["x-holm-not-built"]).toHaveLength(NOT_BUILT.length);
  });

  it("is OpenAPI 3.1 with unique operation ids, resolvable $refs and the error body as a component", () => {
    expect(doc.openapi).toBe("3.1.0");
    const ids = Object.values(doc.paths as Record<string, Record<string, any>>).flatMap((item) => Object.values(item).map((op) => op.operationId));
    expect(new Set(ids).size).toBe(ids.length);
    const text = JSON.stringify(doc);
    for (const [, name] of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) expect(doc.components.schemas, name).toHaveProperty(name!);
    expect(doc.components.schemas.Error).toMatchObject({ required: ["code", "message", "retryable"] });
    // Every error answer of every operation is that body.
    for (const [p, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const op of Object.values(item)) {
        for (const [status, r] of Object.entries(op.responses as Record<string, any>)) {
          if (Number(status) >= 400) expect(r.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Error" });
        }
        // Every path parameter of the template is declared.
        const names = (op.parameters ?? []).filter((p: any) => p.in === "path").map((p: any) => p.name);
        expect(names, p).toEqual([...p.matchAll(/\{(\w+)\}/g)].map((m) => m[1]));
      }
    }
    expect(doc.paths["/v1/health"].get.security).toEqual([]);
    expect(doc.paths["/v1/boxes"].get.security).toBeUndefined();
    expect(doc.security).toEqual([{ bearer: [] }]);
  });

  it("every documented body accepts its example and refuses an unknown key, in zod and in the JSON Schema", () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    for (const [name, schema] of Object.entries(doc.components.schemas)) ajv.addSchema(schema as object, `#/components/schemas/${name}`);
    const withBody = OPERATIONS.filter((op) => op.body);
    expect(withBody.length).toBeGreaterThan(20);
    for (const op of withBody) {
      const where = `${op.method} ${op.path}`;
      expect(op.example, `${where} needs an example`).toBeDefined();
      const bad = { ...(op.example as object), [UNKNOWN]: 1 };
      expect(op.body!.safeParse(op.example).success, `${where}: zod refuses the example`).toBe(true);
      const parsed = op.body!.safeParse(bad);
      expect(parsed.success, `${where}: zod takes an unknown key`).toBe(false);
      const ref = doc.paths[op.path][op.method.toLowerCase()].requestBody.content["application/json"].schema.$ref;
      const validate = ajv.getSchema(ref)!;
      expect(validate(op.example), `${where}: the document refuses the example: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(validate(bad), `${where}: the document takes an unknown key`).toBe(false);
    }
  });

  it("every documented query refuses an unknown parameter, as the route's schema does", () => {
    const withQuery = OPERATIONS.filter((op) => op.query);
    expect(withQuery.length).toBeGreaterThan(15);
    for (const op of withQuery) {
      expect(op.query!.safeParse({ [UNKNOWN]: "1" }).success, `${op.method} ${op.path}`).toBe(false);
      const params = doc.paths[op.path][op.method.toLowerCase()].parameters.filter((p: any) => p.in === "query").map((p: any) => p.name);
      expect(params, `${op.method} ${op.path}`).not.toContain(UNKNOWN);
      expect(params.length, `${op.method} ${op.path}`).toBeGreaterThan(0);
    }
  });

  it("a batch body's actions are the steps, by reference", () => {
    const batch = doc.components.schemas.BatchBody;
    expect(batch.properties.actions.items).toEqual({ $ref: "#/components/schemas/Step" });
    expect(batch.additionalProperties).toBe(false);
    expect(doc.components.schemas.Step.oneOf.length).toBeGreaterThan(30);
  });
});

describe("GET /v1/openapi.json: what each answer is", () => {
  const ok = (p: string, m = "get") => doc.paths[p][m].responses["200"].content;

  it("a binary answer has its route's media type: a trace frame is a PNG, a recording an MP4", () => {
    expect(Object.keys(ok("/v1/boxes/{id}/trace/frames/{hash}"))).toEqual(["image/png"]);
    expect(Object.keys(ok("/v1/boxes/{id}/trace/recordings/{rid}"))).toEqual(["video/mp4"]);
    expect(ok("/v1/boxes/{id}/trace/recordings/{rid}")["video/mp4"].schema.contentMediaType).toBe("video/mp4");
  });

  it("Chromium's /json (the target list) is an array, not an object", () => {
    expect(ok("/v1/cdp/{token}/json")["application/json"].schema).toMatchObject({ type: "array" });
  });

  it("documents the viewer socket as it documents the DevTools one: open (the ticket is the credential), 401 for a bad ticket", () => {
    const op = doc.paths["/v1/boxes/{id}/screens/{screen}/viewer/socket"]?.get;
    expect(op, "the viewer socket is documented").toBeDefined();
    expect(op.security).toEqual([]);
    expect(op.description).toContain("ticket");
    expect(op.responses["401"]).toBeDefined();
    expect(doc.paths["/v1/cdp/{token}/devtools/{rest}"].get.security).toEqual([]);
  });

  it("every pattern is a JSON Schema regex a validator without Unicode property escapes can read (no \\p{…})", () => {
    const patterns = [...JSON.stringify(doc).matchAll(/"pattern":("(?:[^"\\]|\\.)*")/g)].map((m) => JSON.parse(m[1]!) as string);
    expect(patterns.length).toBeGreaterThan(3);
    // openapi-spec-validator (3.1) refuses `\p{Cc}` as "not a 'regex'": it needs the u flag.
    expect(patterns.filter((p) => /\\[pP]\{/.test(p))).toEqual([]);
    // Each still compiles without the u flag (ECMA-262's plain dialect, which JSON Schema names).
    for (const p of patterns) expect(() => new RegExp(p), p).not.toThrow();
  });

  it("a box name still refuses every control character (C0, DEL, C1) and takes any other", () => {
    for (const c of ["\u0000", "\u0009", "\u001f", "\u007f", "\u0085", "\u009f"]) expect(BoxNameSchema.safeParse(`a${c}b`).success, JSON.stringify(c)).toBe(false);
    for (const n of ["café ☕", "a\u00a0b", "日本語", "x😀y"]) expect(BoxNameSchema.safeParse(n).success, n).toBe(true);
  });
});
