import { v1 } from "~/edge/route.server";
import { ApiError } from "~/utils/api-error.server";

// STUB: filled in by the issue 12 work.
const route = v1({
  GET: () => {
    throw new ApiError("unsupported", "not built yet");
  },
});

export const loader = route.loader, action = route.action;
