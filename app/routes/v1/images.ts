import { requireActor } from "~/edge/auth.server";
import { refuseQuery, v1 } from "~/edge/route.server";
import { listAllImages } from "~/models/image.server";

// GET /v1/images: every image the server built, on every runtime.
const route = v1({
  GET: async ({ request }) => {
    await requireActor(request);
    refuseQuery(request);
    return { images: await listAllImages() };
  },
});

export const loader = route.loader, action = route.action;
