import { errorResponse, notFound } from "~/utils/api-error.server";

// Any path under /v1 that neither a built route nor a not-built one of the seed matches.

const answer = ({ request }: { request: Request }) =>
  errorResponse(notFound(`no route ${request.method} ${new URL(request.url).pathname}`));

export const loader = answer, action = answer;
