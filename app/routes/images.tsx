import { useEffect, useRef, useState } from "react";
import { data, useActionData, useRevalidator } from "react-router";
import { OkOrError, useActionBanner } from "~/components/action-banner";
import { ImageProgress } from "~/components/image-progress";
import { PostForm } from "~/components/post-form";
import { Shell } from "~/components/shell";
import { Button, Card, when } from "~/components/ui";
import { requireFormWorkspace, requireWorkspace } from "~/edge/console.server";
import { field, formAction } from "~/edge/form.server";
import { ImageBuildSchema, buildImage, deleteImage, listAllImages } from "~/models/image.server";
import { atLeast } from "~/models/roles";
import { requireRuntimeAdmin } from "~/models/runtime-store.server";
import { ApiError, isApiError } from "~/utils/api-error.server";
import { validate } from "~/utils/validate.server";
import type { Route } from "./+types/images";

// The server's box images in the console (seed 000 "Runtimes and images", ADR 0017), from the
// same models as GET /v1/images: per runtime, each with its state; a build under way shows its
// step and the tail of its log, read again every second while anything builds. Members start a
// build of a spec (queued, as /v1 does with HOLM_SERVER_JOBS=queue, so the page answers at once);
// only the server's administrator removes an image (images are every workspace's), and the
// model refuses while a box uses it.

export const meta: Route.MetaFunction = () => [{ title: "Images · holm" }];

export async function loader({ request }: Route.LoaderArgs) {
  const ctx = await requireWorkspace(request);
  const images = await listAllImages();
  const runtimes = [...new Set(images.map((i) => i.runtime))];
  return {
    pageWorkspace: ctx.workspace.id,
    csrf: ctx.csrf,
    canBuild: atLeast(ctx.workspace.role, "member"),
    admin: ctx.user.is_admin,
    runtimes: runtimes.map((name) => ({ name, images: images.filter((i) => i.runtime === name) })),
  };
}

export async function action({ request }: Route.ActionArgs) {
  return formAction(async () => {
    const form = await request.formData();
    const ctx = await requireFormWorkspace(request, form);
    const intent = field(form, "intent");
    if (intent === "build") {
      if (!atLeast(ctx.workspace.role, "member")) throw new ApiError("denied", "a viewer cannot build images");
      let body: ReturnType<typeof validate<typeof ImageBuildSchema>>;
      try {
        const text = field(form, "spec").trim();
        let spec: unknown;
        try {
          spec = text ? JSON.parse(text) : undefined;
        } catch {
          throw new ApiError("bad_request", "the spec is not valid JSON");
        }
        body = validate(ImageBuildSchema, spec === undefined ? {} : { spec }, "form");
      } catch (e) {
        // The spec's own faults are said at its field (marked invalid, described by the message).
        if (isApiError(e)) return data({ error: e.message, spec: true }, { status: 400 });
        throw e;
      }
      const out = await buildImage(ctx.actor, "docker", body, { queue: true });
      // `building`: the banner says it, so the page's live region does not say it again.
      if (out.queued) return { ok: `Building image ${String(out.body.digest)}.`, building: String(out.body.digest) };
      return { ok: `Image ${String(out.body.digest)} is built already.` };
    }
    if (intent === "remove") {
      await requireRuntimeAdmin(ctx.actor);
      const out = await deleteImage(ctx.actor, field(form, "runtime"), field(form, "digest"));
      // Its row, which had the focus, is gone: the banner takes it.
      return { ok: `Image ${out.image} removed.`, focus: true };
    }
    throw new ApiError("bad_request", `unknown intent "${intent}"`);
  });
}

export default function Images({ loaderData }: Route.ComponentProps) {
  const answer = useActionData<typeof action>();
  const { shown, dismiss } = useActionBanner(answer, { okMs: 10_000 });
  const specError = shown && "spec" in shown && "error" in shown ? shown.error : undefined;
  const { csrf, canBuild, admin, runtimes } = loaderData;
  const news = useBuildNews(runtimes, answer && "building" in answer ? answer.building : undefined);
  const building = runtimes.some((r) => r.images.some((i) => i.state === "building"));
  const revalidator = useRevalidator();
  // A build moves on its own: read the page again every second while one is under way.
  useEffect(() => {
    if (!building) return;
    const timer = setInterval(() => {
      if (document.visibilityState === "visible" && revalidator.state === "idle") void revalidator.revalidate();
    }, 1000);
    return () => clearInterval(timer);
  }, [building, revalidator]);
  return (
    <Shell>
      <h1 className="mb-6 text-2xl font-semibold tracking-tight">Images</h1>
      <div className="space-y-6">
        {/* What the builds did since the page was drawn, for screen readers: the banner that said
            "Building image …" goes after 10 s, and a row's state is plain text. */}
        <p role="status" className="sr-only" data-testid="build-news">
          {news}
        </p>
        {specError ? null : <OkOrError shown={shown} dismiss={dismiss} />}
        {canBuild ? (
          <Card title="Build an image">
            <PostForm csrf={csrf} intent="build" className="space-y-3">
              <label className="block text-sm font-medium text-slate-700" htmlFor="build-spec">
                Box spec (JSON; empty for the default desktop)
              </label>
              <textarea
                id="build-spec"
                name="spec"
                rows={3}
                placeholder='{"desktop": {"packages": ["gimp"]}}'
                aria-invalid={specError ? true : undefined}
                aria-describedby={specError ? "build-spec-error" : undefined}
                className="w-full rounded-md border border-slate-300 bg-white px-3 py-2 font-mono text-xs"
              />
              {specError ? (
                <p id="build-spec-error" role="alert" className="text-sm text-red-700">
                  {specError}
                </p>
              ) : null}
              <Button type="submit">Build image</Button>
            </PostForm>
          </Card>
        ) : null}
        {runtimes.length === 0 ? (
          <Card title="No images yet">
            <p className="text-sm text-slate-600">An image is built when a box first needs it, or here.</p>
          </Card>
        ) : (
          runtimes.map((rt) => (
            <Card key={rt.name} title={`Runtime ${rt.name}`}>
              <ul className="divide-y divide-slate-200">
                {rt.images.map((img) => {
                  const label = img.image || `${rt.name}/${img.digest}`;
                  return (
                    <li key={img.digest} className="py-3 text-sm" aria-label={`Image ${label}`}>
                      <div className="flex flex-wrap items-center gap-x-3 gap-y-1">
                        <code className="break-all font-mono text-xs">{label}</code>
                        <span className={img.state === "failed" ? "font-medium text-red-700" : img.state === "building" ? "font-medium text-amber-800" : "font-medium text-emerald-700"}>
                          {img.state ?? "built"}
                        </span>
                        <span className="text-slate-600">{img.packages.length ? `packages: ${img.packages.join(", ")}` : "default packages"}</span>
                        <span className="text-slate-600">{img.built_at_ms ? `built ${when(img.built_at_ms)}` : `asked ${when(img.created_at_ms)}`}</span>
                        {admin && img.state !== "building" ? (
                          <span className="ml-auto">
                            <PostForm
                              csrf={csrf}
                              intent="remove"
                              fields={{ runtime: rt.name, digest: img.digest }}
                              confirm={{ title: `Remove the image ${label}?`, body: "It is refused while a box uses it: remove that box first. A box that needs it later builds it again.", action: "Remove image" }}
                            >
                              <Button type="submit" variant="danger" aria-label={`Remove ${label}`}>
                                Remove
                              </Button>
                            </PostForm>
                          </span>
                        ) : null}
                      </div>
                      {img.state === "failed" && img.reason ? <p className="mt-1 break-all text-xs text-red-700">{img.reason}</p> : null}
                      {img.state === "building" ? <ImageProgress label={label} progress={img.progress} /> : null}
                    </li>
                  );
                })}
              </ul>
            </Card>
          ))
        )}
      </div>
    </Shell>
  );
}

type Runtimes = Route.ComponentProps["loaderData"]["runtimes"];

/**
 * A sentence for each build that started, finished or failed since the last read of the page;
 * not the start of `announced`, the build this page asked for (its banner says that).
 */
function useBuildNews(runtimes: Runtimes, announced: string | undefined): string {
  const seen = useRef<Map<string, string> | null>(null);
  const [news, setNews] = useState("");
  const pending = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(() => () => clearTimeout(pending.current), []);
  useEffect(() => {
    const before = seen.current;
    const now = new Map<string, string>();
    const lines: string[] = [];
    for (const rt of runtimes) {
      for (const img of rt.images) {
        const key = `${rt.name}/${img.digest}`;
        const state = img.state ?? "built";
        now.set(key, state);
        const was = before?.get(key);
        if (!before || was === state) continue;
        const label = img.image || key;
        if (state === "building") {
          if (img.digest !== announced) lines.push(`Building ${label}.`);
        }
        else if (state === "failed") lines.push(`The build of ${label} failed${img.reason ? `: ${img.reason}` : "."}`);
        else if (was === "building") lines.push(`${label} is built.`);
      }
    }
    seen.current = now;
    if (!lines.length) return;
    // Emptied first and said on the next tick: a screen reader hears a change, and the same
    // sentence again (a rebuild that fails as the last one did) would be no change at all.
    setNews("");
    clearTimeout(pending.current);
    const text = lines.join(" ");
    pending.current = setTimeout(() => setNews(text), 100);
  }, [runtimes, announced]);
  return news;
}
